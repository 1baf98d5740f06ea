//go:build linux

package procgroup

import (
	"errors"

	"golang.org/x/sys/unix"
)

// WaitExited blocks until process pid has exited, without reaping it
// (waitid with WNOWAIT), so that its process group id stays reserved while
// the rest of the group is killed. It reports false if that was not
// possible.
func WaitExited(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil
	}
}
