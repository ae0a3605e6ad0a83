package main

import (
	"runtime/debug"
)

// Version, when set at link time (-ldflags "-X main.Version=v1.2.3"),
// is the version --version, INFO, HELLO and the build-info metric
// report. Left empty, the module's build information names it.
var Version string

// version is the running build's version: Version when the linker set
// it, otherwise the module version the go command recorded (a tag for
// "go install …@v1.2.3"; "(devel)" for a build from a checkout), followed
// for a checkout by the commit and "-dirty" when the tree had changes.
func version() string {
	if Version != "" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return versionOf(info)
}

// versionOf reads the module version; a build of a tagged, clean
// checkout has the tag, any other build of a checkout a pseudo-version
// that names the commit (with "+dirty" for local changes). Where the go
// command recorded no version ("(devel)", e.g. without VCS stamping),
// the commit is taken from the VCS settings when they are there.
func versionOf(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return "devel-" + rev
}
