//go:build unix

package tools

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

func execSupported() error { return nil }

// configureGroup makes the command the leader of a new process group, so
// that it and everything it starts can be signalled together, and (on
// Linux) has it killed if this process dies.
func configureGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
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
