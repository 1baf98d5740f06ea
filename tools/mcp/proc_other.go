//go:build !unix

package mcp

import (
	"os"
	"os/exec"
)

type killSignal = os.Signal

var (
	sigTerm = os.Kill // no SIGTERM: stop at once
	sigKill = os.Kill
)

func configureGroup(*exec.Cmd) {}

// signalGroup kills the process pid (there are no process groups to
// signal here).
func signalGroup(pid int, _ killSignal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	_ = p.Kill()
	return nil
}

func waitExited(int) bool { return false }
