//go:build !linux

package procgroup

import (
	"errors"
	"os/exec"
	"runtime"
)

// WaitExited reports false: outside Linux the process cannot be awaited
// without reaping it, so callers kill the group after Wait, best effort.
func WaitExited(int) bool { return false }

// Probe reports Group: namespaces are Linux's.
func Probe() Containment { return Group }

// Contain does nothing: outside Linux a command is held by its process
// group only.
func Contain(*exec.Cmd, Containment) {}

// Adopt fails: only Linux lets a process adopt orphans.
func Adopt() error {
	return errors.New("cannot adopt orphaned processes on " + runtime.GOOS)
}

// Sweep does nothing and reports 0: there are no adopted orphans.
func Sweep() int { return 0 }
