//go:build !linux

package childproc

import (
	"os/exec"
	"syscall"
)

// tie puts the child in its own process group; this system has no
// parent-death signal, so only a cleanup or a cancelled context kills it.
func tie(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}
