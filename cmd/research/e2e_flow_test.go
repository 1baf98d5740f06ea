package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// raftFlow is what a flow run on the Raft task talks to — a web, SearXNG
// over it, OpenAI speaking flowScript for a fresh workspace (through wrap,
// when not nil) — and its environment.
func raftFlow(t *testing.T, wrap func(func(oaCallCtx) oaReply) func(oaCallCtx) oaReply) (ws string, oa *fakeOpenAI, envv []string) {
	t.Helper()
	web, _ := newFakeWeb(t)
	sx := newFakeSearXNG(t, web.URL)
	ws = t.TempDir()
	script := flowScript(t, ws, false)
	if wrap != nil {
		script = wrap(script)
	}
	oa = newFakeOpenAI(t, script)
	return ws, oa, env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL(), "SEARXNG_URL": sx.srv.URL})
}

// hangingAgentSteps makes a script's agent steps hang until hang is
// closed (a nil hang: for good).
func hangingAgentSteps(hang <-chan struct{}) func(func(oaCallCtx) oaReply) func(oaCallCtx) oaReply {
	return func(script func(oaCallCtx) oaReply) func(oaCallCtx) oaReply {
		return func(c oaCallCtx) oaReply {
			if isAgentStep(c) {
				select {
				case <-hang:
				default:
					return oaReply{Hang: true}
				}
			}
			return script(c)
		}
	}
}

// flowScript plays the planner, the researcher's models and the agent of a
// flow that researches Raft, writes raft.md and summarises.
func flowScript(t *testing.T, ws string, blocked bool) func(c oaCallCtx) oaReply {
	research := searchResearchScript()
	return func(c oaCallCtx) oaReply {
		p := c.req.prompt()
		switch {
		case strings.Contains(p, "You are the planner") && strings.Contains(p, "is blocked"):
			return oaReply{ToolCalls: []oaCall{{Name: "planning", Args: `{"command":"update","steps":["[agent] Write raft.md from the research alone"]}`}}}
		case strings.Contains(p, "You are the planner"):
			steps := `["[researcher] How does Raft elect a leader?","[agent] Write raft.md with the findings"]`
			if blocked {
				steps = `["[researcher] How does Raft elect a leader?","[agent] Fetch the Raft paper PDF","[agent] Write raft.md with the findings"]`
			}
			return oaReply{ToolCalls: []oaCall{{Name: "planning", Args: `{"command":"create","title":"Raft notes","steps":` + steps + `}`}}}
		case strings.Contains(p, "You write the final answer of a planned task"):
			return oaReply{Content: "Raft elects a leader with randomized election timeouts [S1]; the notes are in [raft.md](raft.md). A made-up [paper](https://papers.example/raft.pdf) goes."}
		case strings.Contains(p, "Do step 1 now") && blocked:
			return oaReply{ToolCalls: []oaCall{terminate("failure", "The PDF host refused the download.")}}
		case strings.Contains(p, "You are carrying out one step"):
			if len(c.req.toolResults()) == 0 {
				args, _ := json.Marshal(map[string]string{"command": "create", "path": filepath.Join(ws, "raft.md"), "file_text": "# Raft\n\nLeaders are elected by randomized timeouts.\n"})
				return oaReply{Content: "I will write the notes.", ToolCalls: []oaCall{{Name: "str_replace_editor", Args: string(args)}}}
			}
			return oaReply{ToolCalls: []oaCall{terminate("success", "Wrote raft.md: leaders are elected by randomized timeouts [S1].")}}
		}
		return research(c)
	}
}

func TestE2EFlow(t *testing.T) {
	t.Parallel()
	t.Run("research step, file-writing step, summary with sources", func(t *testing.T) {
		web, _ := newFakeWeb(t)
		sx := newFakeSearXNG(t, web.URL)
		ws := t.TempDir()
		oa := newFakeOpenAI(t, flowScript(t, ws, false))
		vars := map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL(), "SEARXNG_URL": sx.srv.URL}
		res := run(t, env(t, vars), "flow", "--model", "openai:gpt-4.1-mini", "--allow-private-urls", "--loops", "1", "--workspace", ws,
			"Research how Raft elects a leader and write notes to raft.md")
		require.Equal(t, 0, res.code, res)
		if dir := os.Getenv("DEEPGRAPH_ARTIFACTS"); dir != "" {
			_ = os.MkdirAll(dir, 0o755)
			_ = os.WriteFile(filepath.Join(dir, "flow-transcript.txt"), []byte(res.stderr+"\n--- stdout ---\n"+res.stdout), 0o644)
		}
		b, err := os.ReadFile(filepath.Join(ws, "raft.md"))
		require.NoError(t, err)
		assert.Contains(t, string(b), "randomized timeouts")

		assertInOrder(t, res.stderr, "Flow using openai:gpt-4.1-mini", "Executors: agent, researcher",
			"Plan: Raft notes", "0. [ ] [researcher] How does Raft elect a leader?", "1. [ ] [agent] Write raft.md with the findings",
			"Step 0 [researcher] How does Raft elect a leader?: in progress", "│ Generating search queries", "│ Queries:",
			"Step 0 [researcher]: completed",
			"Step 1 [agent] Write raft.md with the findings: in progress", "│ Step 1: I will write the notes.", "→ str_replace_editor",
			"Step 1 [agent]: completed", "Summary written", "Finished: completed", "2/2 steps completed")
		// The summary cites a page the research read; the invented link is gone.
		assertCitations(t, res.stdout, sx.returned())
		assert.Contains(t, res.stdout, "Raft elects a leader with randomized election timeouts [1](")
		assert.Contains(t, res.stdout, "the notes are in `raft.md`.")
		assert.Contains(t, res.stdout, "\n## Sources\n\n1. [")
		assert.NotContains(t, res.stdout, "papers.example")
		assert.Contains(t, res.stderr, "Removed 1 citation")
		assert.NotContains(t, res.all(), openaiKey)
	})

	t.Run("a blocked step is revised and exits 3; JSON result", func(t *testing.T) {
		web, _ := newFakeWeb(t)
		sx := newFakeSearXNG(t, web.URL)
		ws := t.TempDir()
		oa := newFakeOpenAI(t, flowScript(t, ws, true))
		vars := map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL(), "SEARXNG_URL": sx.srv.URL}
		res := run(t, env(t, vars), "flow", "--format", "json", "--model", "openai:gpt-4.1-mini", "--allow-private-urls", "--loops", "1",
			"--workspace", ws, "Research Raft, get the paper and write notes")
		require.Equal(t, 3, res.code, res)
		assertInOrder(t, res.stderr, "Step 1 [agent]: blocked — the agent ended with status failure: The PDF host refused the download.",
			"Revised plan (revision 1)", "[!] [agent] Fetch the Raft paper PDF", "[ ] [agent] Write raft.md from the research alone",
			"Step 2 [agent] Write raft.md from the research alone: in progress", "Step 2 [agent]: completed",
			"Finished: partial", "the flow ended partial: 1 step blocked")
		var doc struct {
			Status string `json:"status"`
			Plan   struct {
				Steps []struct {
					Status string `json:"status"`
				} `json:"steps"`
			} `json:"plan"`
			Revisions int `json:"revisions"`
			Sources   []struct {
				URL string `json:"url"`
			} `json:"sources"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res.stdout)
		assert.Equal(t, "partial", doc.Status)
		assert.Equal(t, 1, doc.Revisions)
		require.Len(t, doc.Plan.Steps, 3)
		assert.Equal(t, "blocked", doc.Plan.Steps[1].Status)
		assert.Equal(t, "completed", doc.Plan.Steps[2].Status)
		require.NotEmpty(t, doc.Sources)
	})

	t.Run("a step that asks for a file is not completed by a text reply", func(t *testing.T) {
		ws := t.TempDir()
		oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply {
			p := c.req.prompt()
			switch {
			case strings.Contains(p, "You are the planner"):
				return oaReply{ToolCalls: []oaCall{{Name: "planning", Args: `{"command":"create","title":"Notes","steps":["[agent] Write notes.md about Raft"]}`}}}
			case strings.Contains(p, "You write the final answer of a planned task"):
				return oaReply{Content: "The notes step did not finish."}
			}
			return oaReply{Content: "Here are the notes: Raft elects a leader by randomized timeouts."}
		})
		vars := map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()}
		res := run(t, env(t, vars), "flow", "--model", "openai:gpt-4.1-mini", "--loops", "1", "--workspace", ws, "write notes.md about Raft")
		require.Equal(t, 3, res.code, res)
		assert.Contains(t, res.stderr, "notes.md, missing or empty in the workspace", res)
		assert.Contains(t, res.stderr, "Finished: partial", res)
		assert.NoFileExists(t, filepath.Join(ws, "notes.md"))
	})

	t.Run("--approve-plan without a terminal and without a store is refused", func(t *testing.T) {
		oa := newFakeOpenAI(t, agentScript(oaReply{Content: "never asked"}))
		res := run(t, env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()}),
			"flow", "--approve-plan", "--no-save", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(), "x")
		require.Equal(t, 2, res.code, res)
		assert.Contains(t, res.stderr, "--approve-plan asks on the terminal or pauses the run in the store")
		assert.Zero(t, oa.count())
	})
}

// TestE2EFlowFailureKeepsFinishedSteps: a flow whose summary call fails
// prints what its finished steps found (Markdown), or its JSON document
// marked incomplete with the error, instead of nothing.
func TestE2EFlowFailureKeepsFinishedSteps(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"markdown", "json"} {
		t.Run(format, func(t *testing.T) {
			ws, _, envv := raftFlow(t, func(script func(oaCallCtx) oaReply) func(oaCallCtx) oaReply {
				return func(c oaCallCtx) oaReply {
					if strings.Contains(c.req.prompt(), "You write the final answer of a planned task") {
						return oaReply{Status: 400, ErrBody: `{"error":{"message":"Invalid request: the summary was refused","type":"invalid_request_error"}}`}
					}
					return script(c)
				}
			})
			res := run(t, envv, "flow", "--format", format, "--model", "openai:gpt-4.1-mini", "--allow-private-urls", "--loops", "1",
				"--workspace", ws, "Research how Raft elects a leader and write notes to raft.md")
			require.Equal(t, 1, res.code, res)
			if format == "json" {
				var doc struct {
					Incomplete bool   `json:"incomplete"`
					Error      string `json:"error"`
					Partial    string `json:"partial"`
					Steps      []struct {
						Status string `json:"status"`
					} `json:"steps"`
				}
				require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res.stdout)
				assert.True(t, doc.Incomplete)
				assert.Contains(t, doc.Error, "the summary was refused")
				assert.Len(t, doc.Steps, 2, "both finished steps are kept")
				assert.Contains(t, doc.Partial, "Wrote raft.md")
				return
			}
			assert.Contains(t, res.stdout, "The flow stopped before its summary")
			assert.Contains(t, res.stdout, "Step 2 (agent, completed): Write raft.md with the findings")
			assert.Contains(t, res.stdout, "Wrote raft.md")
			assert.Equal(t, 1, strings.Count(res.stdout, "## Sources"), "one Sources list, at the end")
		})
	}
}

// TestE2EFlowTimeoutKeepsFinishedSteps: a flow stopped by --timeout while a
// step runs prints a best-effort summary, its finished step's result and
// the steps not done, with its sources (Markdown), or its JSON document
// marked incomplete; exit 1.
func TestE2EFlowTimeoutKeepsFinishedSteps(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"markdown", "json"} {
		t.Run(format, func(t *testing.T) {
			// The agent's step outlives the timeout (nil: it never answers).
			ws, _, envv := raftFlow(t, hangingAgentSteps(nil))
			res := run(t, envv, "flow", "--format", format, "--timeout", "4s", "--model", "openai:gpt-4.1-mini", "--allow-private-urls",
				"--loops", "1", "--workspace", ws, "Research how Raft elects a leader and write notes to raft.md")
			require.Equal(t, 1, res.code, res)
			assert.Contains(t, res.stderr, "did not finish within the timeout of 4s", res)
			if format == "json" {
				var doc struct {
					Incomplete bool   `json:"incomplete"`
					BestEffort bool   `json:"best_effort"`
					Error      string `json:"error"`
					Partial    string `json:"partial"`
					Steps      []struct {
						Status string `json:"status"`
					} `json:"steps"`
					Sources []struct {
						URL string `json:"url"`
					} `json:"sources"`
				}
				require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res.stdout)
				assert.True(t, doc.Incomplete)
				assert.NotEmpty(t, doc.Error)
				require.Len(t, doc.Steps, 1, "the finished step is kept")
				assert.Equal(t, "completed", doc.Steps[0].Status)
				assert.Contains(t, doc.Partial, "Step 1 (researcher, completed)")
				assert.True(t, doc.BestEffort, "a summary was written when the time ran out")
				assert.Contains(t, doc.Partial, "Raft elects a leader with randomized election timeouts [1](")
				assert.Contains(t, doc.Partial, "Not done:\n- [agent] Write raft.md with the findings")
				assert.NotEmpty(t, doc.Sources, "the partial's sources")
				return
			}
			// The best-effort summary, written when the time ran out, then
			// the finished step's result; one Sources list.
			assertInOrder(t, res.stdout, "ran out of time before it finished; a summary of what it had done (incomplete)",
				"Raft elects a leader with randomized election timeouts [1](",
				"The flow stopped before its summary", "Step 1 (researcher, completed): How does Raft elect a leader?",
				"Not done:\n- [agent] Write raft.md with the findings")
			assert.Equal(t, 1, strings.Count(res.stdout, "## Sources"), "one Sources list, at the end")
			assert.Contains(t, res.stdout, "\n## Sources\n\n1. [")
		})
	}
}
