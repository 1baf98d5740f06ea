//go:build unix

package citation

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used so far (user and
// system), which other work on a busy machine does not inflate.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
