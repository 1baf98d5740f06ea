//go:build unix

package tools

import (
	"os/exec"

	"github.com/deepgraph/deepgraph/internal/procgroup"
)

func execSupported() error { return nil }

// configureGroup makes the command the leader of a new process group, so
// that it and everything it starts can be signalled together, and — on
// Linux — ties it to this process and contains it as c says (see
// procgroup.Contain).
func configureGroup(cmd *exec.Cmd, c procgroup.Containment) {
	procgroup.Configure(cmd)
	procgroup.Contain(cmd, c)
}
