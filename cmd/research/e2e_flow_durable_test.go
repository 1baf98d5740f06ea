package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Flows are kept in the run store like research and agent runs: listed,
// shown, paused for plan approval without a terminal and resumed with
// --answer, and resumed after a SIGKILL without their finished steps'
// model calls being made again.

// isAgentStep reports whether a request is an agent step's model call.
func isAgentStep(c oaCallCtx) bool {
	return strings.Contains(c.req.prompt(), "You are carrying out one step")
}

func TestE2EFlowPlanApprovalWithoutATerminal(t *testing.T) {
	t.Parallel()
	ws, oa, envv := raftFlow(t, nil)
	tr := &transcript{t: t}
	defer tr.log()
	args := []string{"flow", "--approve-plan", "--model", "openai:gpt-4.1-mini", "--allow-private-urls", "--loops", "1", "--workspace", ws,
		"Research how Raft elects a leader and write notes to raft.md"}
	res := run(t, envv, args...)
	tr.add("research flow --approve-plan …", res)
	require.Equal(t, exitNeedsInput, res.code, res)
	id := runIDOf(t, res.stderr)
	assertInOrder(t, res.stderr, "Plan: Raft notes", "Paused: run "+id+" waits for the approval of its plan:",
		"[researcher] How does Raft elect a leader?", "research resume "+id+" --answer approve")
	assert.Empty(t, res.stdout)
	planned := oa.count()
	assert.Equal(t, 1, planned, "only the planner ran")

	runs := run(t, envv, "runs")
	tr.add("research runs", runs)
	assert.Regexp(t, id+`.*needs-input.*flow: Research how Raft`, runs.stdout)

	// An edit: the steps not done are replaced.
	res = run(t, envv, "resume", id, "--answer", "[agent] Write raft.md with the findings")
	tr.add("research resume "+id+" --answer …", res)
	require.Equal(t, 0, res.code, res)
	assertInOrder(t, res.stderr, "Run "+id+" resumed", "Plan approved as edited:", "0. [ ] [agent] Write raft.md with the findings",
		"Step 0 [agent] Write raft.md with the findings: in progress", "Step 0 [agent]: completed", "Finished: completed", "1/1 steps completed")
	assert.Contains(t, res.stdout, "Raft elects a leader")
	assert.NotContains(t, res.stderr, "[researcher]: in progress", "the replaced step never ran")
	for _, r := range oa.all()[planned:] {
		assert.NotContains(t, string(r.Body), "You are the planner of a team", "the plan was not made again")
	}

	show := run(t, envv, "show", id)
	tr.add("research show "+id, show)
	require.Equal(t, 0, show.code, show)
	assert.Equal(t, res.stdout, show.stdout)
	js := run(t, envv, "show", "--format", "json", id)
	require.Equal(t, 0, js.code, js)
	var doc struct {
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &doc), js.stdout)
	assert.Equal(t, "completed", doc.Status)
	runs = run(t, envv, "runs")
	assert.Regexp(t, id+`.*done.*flow: Research how Raft`, runs.stdout)
}

func TestE2EFlowPlanRejectedWithResumeAnswer(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	oa := newFakeOpenAI(t, flowScript(t, ws, false))
	envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
	res := run(t, envv, "flow", "--approve-plan", "--no-input", "--model", "openai:gpt-4.1-mini", "--workspace", ws, "Write raft notes")
	require.Equal(t, exitNeedsInput, res.code, res)
	id := runIDOf(t, res.stderr)
	res = run(t, envv, "resume", id, "--answer", "no: not now")
	require.Equal(t, 3, res.code, res)
	assert.Contains(t, res.stderr, "the plan was rejected")
	assert.NoFileExists(t, ws+"/raft.md")
}

// TestE2EFlowKilledResumes: a flow killed (SIGKILL) while its second step
// runs is resumed with research resume: its first step's model calls are
// not made again, the second step runs, and the summary is written.
func TestE2EFlowKilledResumes(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{}) // closed: the agent step answers again
	ws, oa, envv := raftFlow(t, hangingAgentSteps(hang))
	tr := &transcript{t: t}
	defer tr.log()
	p := startBin(t, envv, "flow", "--model", "openai:gpt-4.1-mini", "--allow-private-urls", "--loops", "1", "--workspace", ws,
		"Research how Raft elects a leader and write notes to raft.md")
	p.waitStderr(t, "Step 1 [agent] Write raft.md with the findings: in progress", 30*time.Second)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	killed := p.wait(t, 10*time.Second)
	tr.add("research flow … (killed)", killed)
	id := runIDOf(t, killed.stderr)
	before := len(oa.all())
	stepOne := 0
	for _, r := range oa.all() {
		if !strings.Contains(string(r.Body), "You are carrying out one step") {
			stepOne++ // the planner's and the researcher's calls
		}
	}

	// Killed while running, the stored state still shows what was done.
	show := run(t, envv, "show", id)
	tr.add("research show "+id+" (killed)", show)
	require.Equal(t, 0, show.code, show)
	assert.Contains(t, show.stdout, "Step 1 (researcher, completed): How does Raft elect a leader?")
	assert.Contains(t, show.stdout, "Not done:\n- [agent] Write raft.md with the findings")

	close(hang)
	res := run(t, envv, "resume", id)
	tr.add("research resume "+id, res)
	require.Equal(t, 0, res.code, res)
	// The step that was running when the flow was killed runs again.
	assertInOrder(t, res.stderr, "Run "+id+" resumed", "│ Step 1: I will write the notes.", "Step 1 [agent]: completed",
		"Summary written", "Finished: completed", "2/2 steps completed")
	assert.NotContains(t, res.stderr, "Step 0 [researcher]", "the finished step is not run again")
	assert.FileExists(t, ws+"/raft.md")
	assert.Contains(t, res.stdout, "Raft elects a leader with randomized election timeouts [1](")
	again := 0
	for _, r := range oa.all()[before:] {
		b := string(r.Body)
		if strings.Contains(b, "You are the planner of a team") || !strings.Contains(b, "You are carrying out one step") && !strings.Contains(b, "You write the final answer of a planned task") {
			again++
		}
	}
	assert.Zero(t, again, "none of the %d calls of the plan and the finished step is made again", stepOne)
	runs := run(t, envv, "runs")
	assert.Regexp(t, id+`.*done.*flow: Research how Raft`, runs.stdout)
}

// TestE2EFlowApproveToolsWithoutATerminal: with --approve-tools an agent
// step's file write waits for approval: the flow pauses (exit 6), research
// resume --answer approve continues it where it paused — the finished
// research step and the agent's first model call are not repeated — and
// the file is written once.
func TestE2EFlowApproveToolsWithoutATerminal(t *testing.T) {
	t.Parallel()
	ws, oa, envv := raftFlow(t, nil)
	tr := &transcript{t: t}
	defer tr.log()
	res := run(t, envv, "flow", "--approve-tools", "--model", "openai:gpt-4.1-mini", "--allow-private-urls", "--loops", "1", "--workspace", ws,
		"Research how Raft elects a leader and write notes to raft.md")
	tr.add("research flow --approve-tools …", res)
	require.Equal(t, exitNeedsInput, res.code, res)
	id := runIDOf(t, res.stderr)
	assertInOrder(t, res.stderr, "Step 0 [researcher]: completed", "Step 1 [agent] Write raft.md with the findings: in progress",
		"Paused: run "+id+" waits for your approval of a tool call:", "str_replace_editor", "research resume "+id+" --answer approve")
	assert.NoFileExists(t, ws+"/raft.md", "nothing written before the approval")
	show := run(t, envv, "show", id)
	tr.add("research show "+id+" (paused)", show)
	require.Equal(t, 0, show.code, show)
	assert.Contains(t, show.stdout, "Step 1 (researcher, completed): How does Raft elect a leader?", "a paused flow shows its finished steps")
	before := len(oa.all())

	res = run(t, envv, "resume", id, "--answer", "approve")
	tr.add("research resume "+id+" --answer approve", res)
	require.Equal(t, 0, res.code, res)
	assertInOrder(t, res.stderr, "Run "+id+" resumed", "← str_replace_editor", "Step 1 [agent]: completed", "Finished: completed", "2/2 steps completed")
	assert.FileExists(t, ws+"/raft.md")
	after := oa.all()[before:]
	require.Len(t, after, 2, "the agent's step after the write, and the summary: nothing before the pause is asked again")
	assert.Contains(t, string(after[0].Body), "Created raft.md")
	assert.Contains(t, string(after[1].Body), "You write the final answer of a planned task")
}

// TestE2EFlowInterruptedResumes: Ctrl-C (SIGINT) while the second step
// runs prints what the finished step found, exits 130 and keeps the run as
// interrupted; research resume finishes it without the finished step.
func TestE2EFlowInterruptedResumes(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	ws, _, envv := raftFlow(t, hangingAgentSteps(hang))
	p := startBin(t, envv, "flow", "--model", "openai:gpt-4.1-mini", "--allow-private-urls", "--loops", "1", "--workspace", ws,
		"Research how Raft elects a leader and write notes to raft.md")
	p.waitStderr(t, "Step 1 [agent] Write raft.md with the findings: in progress", 30*time.Second)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	res := p.wait(t, 30*time.Second)
	require.Equal(t, 130, res.code, res)
	assert.Contains(t, res.stdout, "Step 1 (researcher, completed): How does Raft elect a leader?", "what the finished step found is printed")
	id := runIDOf(t, res.stderr)
	runs := run(t, envv, "runs")
	assert.Regexp(t, id+`.*interrupted.*flow: Research how Raft`, runs.stdout)

	close(hang)
	res = run(t, envv, "resume", id)
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stderr, "Finished: completed")
	assert.NotContains(t, res.stderr, "Step 0 [researcher]", "the finished step is not run again")
	assert.FileExists(t, ws+"/raft.md")
}
