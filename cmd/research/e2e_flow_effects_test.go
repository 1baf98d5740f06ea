//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A flow killed (SIGKILL) while an agent step's bash call runs, after the
// command appended its line: research resume does not run the command
// again — the step's agent is told its outcome is unknown — and the flow
// finishes with the line in the file once.
func TestE2EFlowKilledDuringBashDoesNotRepeatIt(t *testing.T) {
	t.Parallel()
	job := newAppendingJob(t)
	oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply {
		p := c.req.prompt()
		switch {
		case strings.Contains(p, "You are the planner"):
			return oaReply{ToolCalls: []oaCall{{Name: "planning", Args: `{"command":"create","title":"Jobs","steps":["[agent] Record that the job ran"]}`}}}
		case strings.Contains(p, "You write the final answer of a planned task"):
			return oaReply{Content: "The job was recorded once."}
		}
		return job.reply(c)
	})
	envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
	tr := &transcript{t: t}
	defer tr.log()

	p := startBin(t, envv, "flow", "--model", "openai:gpt-4.1-mini", "--allow-exec", "--workspace", job.ws, "Record that the job ran")
	id := job.killDuring(t, p, tr, "research flow --allow-exec …")

	resumed := run(t, envv, "resume", id)
	tr.add("research resume "+id, resumed)
	require.Equal(t, 0, resumed.code, resumed)
	assert.Contains(t, resumed.stderr, "outcome is unknown")
	assert.Contains(t, resumed.stderr, "Finished: completed")
	job.ranOnce(t)
	planner := 0
	for _, r := range oa.all() {
		if strings.Contains(string(r.Body), "You are the planner") {
			planner++
		}
	}
	assert.Equal(t, 1, planner, "the plan was not made again")
}
