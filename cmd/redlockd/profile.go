package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileFlag names a file that receives a CPU profile of the whole run,
// written at shutdown. It serves the benchmark (bench/ -cpuprofile), which
// runs this binary as a child process; it is a flag only, with no
// environment variable or config key, and --help does not list it.
const cpuProfileFlag = "cpuprofile"

// startCPUProfile starts profiling into path ("" = off); stop ends the
// profile and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("invalid --%s %q: %v", cpuProfileFlag, path, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("invalid --%s %q: %v", cpuProfileFlag, path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
