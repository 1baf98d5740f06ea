//go:build !unix

package tools

import (
	"errors"
	"os/exec"
	"runtime"
)

type killSignal int

const (
	sigTerm killSignal = iota
	sigKill
)

func execSupported() error {
	return errors.New("tools: python_execute and bash need process groups, which this package supports on Unix systems only, not " + runtime.GOOS)
}

func configureGroup(*exec.Cmd)          {}
func signalGroup(int, killSignal) error { return nil }
func waitExited(int) bool               { return false }
func killTagged(string)                 {}
