//go:build unix

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A flow killed (SIGKILL) while an agent step's bash call runs, after the
// command appended its line: research resume does not run the command
// again — the step's agent is told its outcome is unknown — and the flow
// finishes with the line in the file once.
func TestE2EFlowKilledDuringBashDoesNotRepeatIt(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	ws := t.TempDir()
	ready := filepath.Join(ws, "ready")
	require.NoError(t, mkfifo(ready))
	args, err := json.Marshal(map[string]string{"command": "echo 'the job ran' >> jobs.log && if [ -p ready ]; then echo go > ready && exec sleep 60; fi"})
	require.NoError(t, err)
	oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply {
		p := c.req.prompt()
		switch {
		case strings.Contains(p, "You are the planner"):
			return oaReply{ToolCalls: []oaCall{{Name: "planning", Args: `{"command":"create","title":"Jobs","steps":["[agent] Record that the job ran"]}`}}}
		case strings.Contains(p, "You write the final answer of a planned task"):
			return oaReply{Content: "The job was recorded once."}
		}
		if r := toolResultWith(c.req, "outcome is unknown"); r != "" {
			return oaReply{ToolCalls: []oaCall{terminate("success", "The job was recorded (the first attempt's outcome was unknown; jobs.log shows it ran).")}}
		}
		if len(c.req.toolResults()) > 0 {
			return oaReply{ToolCalls: []oaCall{terminate("failure", "unexpected: "+strings.Join(c.req.toolResults(), " | "))}}
		}
		return oaReply{Content: "I will record the job.", ToolCalls: []oaCall{{Name: "bash", Args: string(args)}}}
	})
	envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
	tr := &transcript{t: t}
	defer tr.log()

	p := startBin(t, envv, "flow", "--model", "openai:gpt-4.1-mini", "--allow-exec", "--workspace", ws, "Record that the job ran")
	went := make(chan error, 1)
	go func() { _, err := os.ReadFile(ready); went <- err }()
	select {
	case err := <-went:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Fatalf("the bash call never ran:\n%s", p.stderr)
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	killed := p.wait(t, 30*time.Second)
	tr.add("research flow --allow-exec … # killed with SIGKILL during its bash call", killed)
	require.Equal(t, 128+int(syscall.SIGKILL), killed.code)
	id := runIDOf(t, killed.stderr)
	require.NoError(t, os.Remove(ready))

	resumed := run(t, envv, "resume", id)
	tr.add("research resume "+id, resumed)
	require.Equal(t, 0, resumed.code, resumed)
	assert.Contains(t, resumed.stderr, "outcome is unknown")
	assert.Contains(t, resumed.stderr, "Finished: completed")
	data, err := os.ReadFile(filepath.Join(ws, "jobs.log"))
	require.NoError(t, err)
	assert.Equal(t, "the job ran\n", string(data), "the line is in the file once")
	planner := 0
	for _, r := range oa.all() {
		if strings.Contains(string(r.Body), "You are the planner") {
			planner++
		}
	}
	assert.Equal(t, 1, planner, "the plan was not made again")
}
