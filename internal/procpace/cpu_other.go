//go:build !unix

package procpace

import "time"

// supported: the process's CPU use cannot be read here, so Start leaves
// the processors as the runtime chose them.
const supported = false

func cpuTime() time.Duration { return 0 }
