//go:build unix

package procpace

import (
	"syscall"
	"time"
)

// supported: the process's CPU use can be read (getrusage).
const supported = true

// cpuTime is the CPU the process has used so far, user and system, over
// all its threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
