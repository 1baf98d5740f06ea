//go:build !unix

package tools

import (
	"errors"
	"os/exec"
	"runtime"

	"github.com/deepgraph/deepgraph/internal/procgroup"
)

func execSupported() error {
	return errors.New("tools: python_execute and bash need process groups, which this package supports on Unix systems only, not " + runtime.GOOS)
}

func configureGroup(*exec.Cmd, procgroup.Containment) {}
func killTagged(string)                               {}
