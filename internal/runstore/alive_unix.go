//go:build unix

package runstore

import (
	"errors"
	"syscall"
)

// processExists sends signal 0 to pid: no error, or EPERM (the process
// belongs to another user), means it exists.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
