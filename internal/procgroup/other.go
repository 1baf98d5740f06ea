//go:build !unix

package procgroup

import (
	"os"
	"os/exec"
)

// Signal is what SignalGroup sends.
type Signal = os.Signal

// The signals callers send; without SIGTERM, both stop at once.
var (
	Term = os.Kill
	Kill = os.Kill
)

// Configure does nothing: there are no process groups here.
func Configure(*exec.Cmd) {}

// SignalGroup kills the process pid (there are no process groups to
// signal here).
func SignalGroup(pid int, _ Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	_ = p.Kill()
	return nil
}
