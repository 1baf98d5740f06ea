//go:build unix

package procgroup

import (
	"errors"
	"os/exec"
	"syscall"
)

// Signal is what SignalGroup sends.
type Signal = syscall.Signal

// The signals callers send: Term asks to stop, Kill forces it.
const (
	Term = syscall.SIGTERM
	Kill = syscall.SIGKILL
)

// Configure makes cmd the leader of a new process group, so that it and
// everything it starts can be signalled together. It replaces
// cmd.SysProcAttr; set further attributes after it.
func Configure(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// SignalGroup sends sig to every process of the group pgid. A group that no
// longer exists is not an error.
func SignalGroup(pgid int, sig Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
