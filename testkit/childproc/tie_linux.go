package childproc

import (
	"os/exec"
	"syscall"
)

// tie sets the child's parent-death signal and own process group, keeping
// whatever else the caller set.
func tie(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
}
