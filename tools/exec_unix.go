//go:build unix

package tools

import (
	"os/exec"

	"github.com/deepgraph/deepgraph/internal/procgroup"
)

func execSupported() error { return nil }

// configureGroup makes the command the leader of a new process group, so
// that it and everything it starts can be signalled together, and (on
// Linux) has it killed if this process dies.
func configureGroup(cmd *exec.Cmd) {
	procgroup.Configure(cmd)
	dieWithParent(cmd.SysProcAttr)
}
