package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestE2EFlowPlanApprovalOnATerminal answers --approve-plan on the terminal
// as a person does, with the default store (the run is kept, and goes on
// where it paused) and with --no-save: Enter approves the plan, which is
// made once.
func TestE2EFlowPlanApprovalOnATerminal(t *testing.T) {
	t.Parallel()
	for _, store := range []bool{true, false} {
		name := "store"
		if !store {
			name = "no-save"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ws, oa, envv := raftFlow(t, nil)
			args := []string{"flow", "--approve-plan", "--model", "openai:gpt-4.1-mini", "--allow-private-urls", "--loops", "1", "--workspace", ws}
			if !store {
				args = append(args, "--no-save")
			}
			master, slave := openPTY(t)
			p := startBinIn(t, slave, envv, append(args, "Research how Raft elects a leader and write notes to raft.md")...)
			p.waitStderr(t, "[plan to approve]", 30*time.Second)
			assert.Equal(t, 1, oa.count(), "only the planner ran before the approval")
			_, err := master.WriteString("\n")
			require.NoError(t, err)
			res := p.wait(t, 60*time.Second)
			require.Equal(t, 0, res.code, res)
			assertInOrder(t, res.stderr, "Plan: Raft notes", "[plan to approve]", "Plan approved", "Step 0 [researcher]", "Step 1 [agent]: completed",
				"Finished: completed", "2/2 steps completed")
			assert.NotContains(t, res.stderr, "Paused:")
			assert.Contains(t, res.stdout, "Raft elects a leader with randomized election timeouts")
			planner := 0
			for _, r := range oa.all() {
				if strings.Contains(string(r.Body), "You are the planner of a team") {
					planner++
				}
			}
			assert.Equal(t, 1, planner, "the plan was made once")
			if store {
				id := runIDOf(t, res.stderr)
				runs := run(t, envv, "runs")
				assert.Regexp(t, id+`.*done.*flow: Research how Raft`, runs.stdout)
			} else {
				assert.NotContains(t, res.stderr, ", kept in ")
			}
		})
	}
}

// TestE2EFlowApproveToolsOnATerminal: an agent step's file write is
// approved on the terminal; an unreadable answer is asked again; the write
// runs once and the flow completes without pausing.
func TestE2EFlowApproveToolsOnATerminal(t *testing.T) {
	t.Parallel()
	ws, _, envv := raftFlow(t, nil)
	master, slave := openPTY(t)
	p := startBinIn(t, slave, envv, "flow", "--approve-tools", "--model", "openai:gpt-4.1-mini", "--allow-private-urls", "--loops", "1",
		"--workspace", ws, "Research how Raft elects a leader and write notes to raft.md")
	const prompt = "[approve a tool call]"
	p.waitCount(t, prompt, 1, 30*time.Second)
	assert.NoFileExists(t, ws+"/raft.md")
	_, err := master.WriteString("maybe\n")
	require.NoError(t, err)
	p.waitCount(t, prompt, 2, 30*time.Second)
	assert.Contains(t, p.stderr.String(), `"maybe" is not a decision`)
	_, err = master.WriteString("approve\n")
	require.NoError(t, err)
	res := p.wait(t, 60*time.Second)
	require.Equal(t, 0, res.code, res)
	assertInOrder(t, res.stderr, "Step 1 [agent] Write raft.md with the findings: in progress", prompt, "← str_replace_editor",
		"Step 1 [agent]: completed", "Finished: completed")
	assert.NotContains(t, res.stderr, "Paused:")
	b, err := os.ReadFile(ws + "/raft.md")
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(b), "# Raft"), "written once")
}
