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

// Tool calls with side effects, end to end: approved before they run
// (--approve-tools, answered with research resume --answer), and never
// repeated blindly when a run killed during one is resumed.

// toolResultWith returns the tool result of the conversation holding
// text, "" when none does.
func toolResultWith(req openaiRequest, text string) string {
	for _, r := range req.toolResults() {
		if strings.Contains(r, text) {
			return r
		}
	}
	return ""
}

// appendingJob is a bash call with a side effect: it appends "the job ran"
// to jobs.log in its workspace and, the first time (while the FIFO ready
// is there), says so through the FIFO and waits to be killed with its run.
// Run again, once the FIFO is gone, it would append its line and end.
type appendingJob struct {
	ws, ready string
	args      string // the bash call's arguments
}

func newAppendingJob(t *testing.T) appendingJob {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	j := appendingJob{ws: t.TempDir()}
	j.ready = filepath.Join(j.ws, "ready")
	require.NoError(t, mkfifo(j.ready))
	args, err := json.Marshal(map[string]string{"command": "echo 'the job ran' >> jobs.log && if [ -p ready ]; then echo go > ready && exec sleep 60; fi"})
	require.NoError(t, err)
	j.args = string(args)
	return j
}

// reply is the agent's side: the bash call, then, told its outcome is
// unknown, a success.
func (j appendingJob) reply(c oaCallCtx) oaReply {
	if r := toolResultWith(c.req, "outcome is unknown"); r != "" {
		return oaReply{ToolCalls: []oaCall{terminate("success", "The job was recorded (the first attempt's outcome was unknown; jobs.log shows it ran).")}}
	}
	if len(c.req.toolResults()) > 0 {
		return oaReply{ToolCalls: []oaCall{terminate("failure", "unexpected: "+strings.Join(c.req.toolResults(), " | "))}}
	}
	return oaReply{Content: "I will record the job.", ToolCalls: []oaCall{{Name: "bash", Args: j.args}}}
}

// killDuring waits until p's bash call has appended its line, kills p
// with SIGKILL, removes the FIFO and returns the killed run's id.
func (j appendingJob) killDuring(t *testing.T, p *started, tr *transcript, what string) string {
	t.Helper()
	went := make(chan error, 1)
	go func() { _, err := os.ReadFile(j.ready); went <- err }()
	select {
	case err := <-went:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Fatalf("the bash call never ran:\n%s", p.stderr)
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	killed := p.wait(t, 30*time.Second)
	tr.add(what+"   # killed with SIGKILL during its bash call", killed)
	require.Equal(t, 128+int(syscall.SIGKILL), killed.code)
	require.NoError(t, os.Remove(j.ready))
	return runIDOf(t, killed.stderr)
}

// ranOnce checks that the job's line is in jobs.log once.
func (j appendingJob) ranOnce(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(j.ws, "jobs.log"))
	require.NoError(t, err)
	assert.Equal(t, "the job ran\n", string(data), "the line is in the file once")
}

// An agent killed (SIGKILL) while its bash call runs, after the command
// appended its line: research resume does not run the command again — the
// model is told its outcome is unknown — and the run finishes with the
// line in the file once.
func TestE2EAgentKilledDuringBashDoesNotRepeatIt(t *testing.T) {
	t.Parallel()
	job := newAppendingJob(t)
	oa := newFakeOpenAI(t, job.reply)
	envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
	tr := &transcript{t: t}
	defer tr.log()

	p := startBin(t, envv, "agent", "--model", "openai:gpt-4.1-mini", "--allow-exec", "--workspace", job.ws, "Record that the job ran")
	id := job.killDuring(t, p, tr, "research agent --allow-exec … \"Record that the job ran\"")

	resumed := run(t, envv, "resume", id)
	tr.add("research resume "+id, resumed)
	require.Equal(t, 0, resumed.code, resumed)
	assert.Contains(t, resumed.stdout, "The job was recorded")
	assert.Contains(t, resumed.stderr, "outcome is unknown", "the step lines say so too")
	job.ranOnce(t)
	bashCalls := 0
	for _, r := range oa.all() {
		var req openaiRequest
		require.NoError(t, json.Unmarshal(r.Body, &req))
		if r := toolResultWith(req, "outcome is unknown"); r != "" {
			assert.Contains(t, r, "it was not run again")
			bashCalls++
		}
	}
	assert.Equal(t, 1, bashCalls, "one model call saw the unknown outcome")
	assert.Len(t, oa.all(), 2, "the think step before the kill was not repeated")
}

// --approve-tools: each call with side effects waits for a decision, given
// here with research resume --answer; the read-only call does not wait.
// An edited call runs with the person's arguments, a rejected one does not
// run, and the model gets a tool message for each (OpenAI's rule, which
// the fake enforces).
func TestE2EAgentApproveToolsWithResume(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	bash := oaCall{Name: "bash", Args: `{"command":"echo first > a.txt"}`}
	create := oaCall{Name: "str_replace_editor", Args: `{"command":"create","path":"b.txt","file_text":"b\n"}`}
	view := oaCall{Name: "str_replace_editor", Args: `{"command":"view","path":"."}`}
	oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply {
		if len(c.req.toolResults()) == 0 {
			return oaReply{ToolCalls: []oaCall{bash, view, create}}
		}
		return oaReply{ToolCalls: []oaCall{terminate("success", "Both handled.")}}
	})
	envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
	ws := t.TempDir()
	tr := &transcript{t: t}
	defer tr.log()

	res := run(t, envv, "agent", "--model", "openai:gpt-4.1-mini", "--allow-exec", "--approve-tools", "--workspace", ws, "Prepare the two notes")
	tr.add("research agent --allow-exec --approve-tools … \"Prepare the two notes\"", res)
	require.Equal(t, exitNeedsInput, res.code, res)
	id := runIDOf(t, res.stderr)
	assert.Contains(t, res.stderr, "waits for your approval of a tool call:\n  The agent wants to run bash {\"command\":\"echo first > a.txt\"}. Allow it?")
	assert.Contains(t, res.stderr, "research resume "+id+" --answer approve")
	assert.NoFileExists(t, filepath.Join(ws, "a.txt"))

	res = run(t, envv, "resume", id, "--answer", `edit: {"command":"echo edited > a.txt"}`)
	tr.add("research resume "+id+` --answer 'edit: {"command":"echo edited > a.txt"}'`, res)
	require.Equal(t, exitNeedsInput, res.code, res)
	assert.Contains(t, res.stderr, "The agent wants to run str_replace_editor")
	assert.Contains(t, res.stderr, `"path":"b.txt"`)

	res = run(t, envv, "resume", id, "--answer", "reject: no b.txt today")
	tr.add("research resume "+id+" --answer 'reject: no b.txt today'", res)
	require.Equal(t, 0, res.code, res)
	assert.Equal(t, "Both handled.\n", res.stdout)
	data, err := os.ReadFile(filepath.Join(ws, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "edited\n", string(data))
	assert.NoFileExists(t, filepath.Join(ws, "b.txt"))
	reqs := oa.all()
	require.Len(t, reqs, 2, "one think step before the approvals, one after")
	var last openaiRequest
	require.NoError(t, json.Unmarshal(reqs[1].Body, &last))
	results := strings.Join(last.toolResults(), "\n---\n")
	assert.Len(t, last.toolResults(), 3, "every call has its tool message: %s", results)
	assert.Contains(t, results, `changed the arguments to {"command":"echo edited > a.txt"}`)
	assert.Contains(t, results, "rejected it: no b.txt today")
}

// --approve-tools pauses the run, which needs the store.
func TestE2EAgentApproveToolsNeedsTheStore(t *testing.T) {
	t.Parallel()
	oa := newFakeOpenAI(t, agentScript(oaReply{ToolCalls: []oaCall{terminate("success", "done")}}))
	envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
	res := run(t, envv, "agent", "--no-save", "--approve-tools", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(), "Do it")
	assert.Equal(t, exitUsage, res.code, res)
	assert.Contains(t, res.stderr, "--approve-tools (agent.approve_tools) pauses the run until each tool call with side effects is approved, which needs the run store: drop --no-save")
	assert.Empty(t, oa.all(), "nothing ran")
}
