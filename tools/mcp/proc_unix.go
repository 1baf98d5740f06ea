//go:build unix

package mcp

import (
	"errors"
	"os/exec"
	"syscall"
)

type killSignal = syscall.Signal

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// configureGroup makes the server the leader of a new process group, so
// that it and everything it starts can be signalled together.
func configureGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to every process of the group pgid. A group that no
// longer exists is not an error.
func signalGroup(pgid int, sig killSignal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
