package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestE2EAgentLimits: the agent's run and tool calls are bounded, its
// workspace is checked, and --format json gives its document, also when it
// fails.
func TestE2EAgentLimits(t *testing.T) {
	t.Parallel()
	agentEnv := func(t *testing.T, oa *fakeOpenAI) []string {
		return env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
	}
	model := []string{"agent", "--no-save", "--model", "openai:gpt-4.1-mini"}
	args := func(more ...string) []string { return append(append([]string(nil), model...), more...) }

	t.Run("--timeout bounds a run whose model never answers", func(t *testing.T) {
		oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply { return oaReply{Hang: true} })
		res := run(t, agentEnv(t, oa), args("--workspace", t.TempDir(), "--timeout", "2s", "think forever")...)
		require.Equal(t, 1, res.code, res)
		assert.Contains(t, res.stderr, "did not finish within the timeout of 2s", res)
	})
	t.Run("--timeout bounds a run whose tool hangs, and its JSON document says so", func(t *testing.T) {
		oa := newFakeOpenAI(t, agentScript(oaReply{Content: "Waiting.", ToolCalls: []oaCall{{Name: "bash", Args: `{"command":"sleep 1000"}`}}}))
		res := run(t, agentEnv(t, oa), args("--workspace", t.TempDir(), "--allow-exec", "--timeout", "2s", "--format", "json", "wait")...)
		require.Equal(t, 1, res.code, res)
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res)
		assert.Equal(t, true, doc["incomplete"], res.stdout)
		assert.Contains(t, doc["error"], "timed out after 2s", res.stdout)
		assert.Contains(t, res.stderr, "did not finish within the timeout of 2s")
		// The best-effort answer written after the deadline, on its own budget.
		assert.Equal(t, "timed_out", doc["status"], res.stdout)
		assert.Equal(t, true, doc["best_effort"], res.stdout)
		assert.Equal(t, "Best effort: the file list is incomplete.", doc["answer"], res.stdout)
	})
	t.Run("a timed-out run prints its best-effort answer", func(t *testing.T) {
		oa := newFakeOpenAI(t, agentScript(oaReply{Content: "Waiting.", ToolCalls: []oaCall{{Name: "bash", Args: `{"command":"sleep 1000"}`}}}))
		res := run(t, agentEnv(t, oa), args("--workspace", t.TempDir(), "--allow-exec", "--timeout", "2s", "wait")...)
		require.Equal(t, 1, res.code, res)
		assert.Equal(t, "Best effort: the file list is incomplete.\n", res.stdout, res)
		assert.Contains(t, res.stderr, "did not finish within the timeout of 2s", res)
	})
	t.Run("a tool call is bounded by --tool-timeout and the agent goes on", func(t *testing.T) {
		oa := newFakeOpenAI(t, agentScript(
			oaReply{ToolCalls: []oaCall{{Name: "bash", Args: `{"command":"sleep 1000"}`}}},
			oaReply{ToolCalls: []oaCall{terminate("success", "gave up waiting")}},
		))
		res := run(t, agentEnv(t, oa), args("--workspace", t.TempDir(), "--allow-exec", "--tool-timeout", "1s", "wait")...)
		require.Equal(t, 0, res.code, res)
		assert.Contains(t, res.stderr, "timed out after 1s", res)
		assert.Equal(t, "gave up waiting\n", res.stdout)
	})
	t.Run("viewing a FIFO fails at once", func(t *testing.T) {
		ws := t.TempDir()
		require.NoError(t, mkfifo(filepath.Join(ws, "pipe")))
		oa := newFakeOpenAI(t, agentScript(
			oaReply{ToolCalls: []oaCall{{Name: "str_replace_editor", Args: `{"command":"view","path":"pipe"}`}}},
			oaReply{ToolCalls: []oaCall{terminate("success", "it is a pipe")}},
		))
		res := run(t, agentEnv(t, oa), args("--workspace", ws, "--timeout", "30s", "look at pipe")...)
		require.Equal(t, 0, res.code, res)
		assert.Contains(t, res.stderr, "named pipe (FIFO)", res)
	})
	t.Run("--format json prints the agent's document", func(t *testing.T) {
		oa := newFakeOpenAI(t, agentScript(oaReply{ToolCalls: []oaCall{terminate("success", "All done.")}}))
		res := run(t, agentEnv(t, oa), args("--workspace", t.TempDir(), "--format", "json", "finish")...)
		require.Equal(t, 0, res.code, res)
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res)
		assert.Equal(t, "All done.", doc["answer"])
		assert.Equal(t, "success", doc["status"])
		assert.Equal(t, false, doc["incomplete"])
	})
	t.Run("--format json on a failed run: the document, incomplete, with its error", func(t *testing.T) {
		oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply {
			return oaReply{Status: 400, ErrBody: `{"error":{"message":"model gpt-nope does not exist","type":"invalid_request_error"}}`}
		})
		res := run(t, agentEnv(t, oa), args("--workspace", t.TempDir(), "--format", "json", "fail")...)
		require.NotEqual(t, 0, res.code, res)
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res)
		assert.Equal(t, true, doc["incomplete"], res.stdout)
		assert.NotEmpty(t, doc["error"], res.stdout)
	})
	for _, dir := range []string{"/etc", "/", "/usr"} {
		t.Run("refuses --workspace "+dir, func(t *testing.T) {
			oa := newFakeOpenAI(t, agentScript(oaReply{Content: "never asked"}))
			res := run(t, agentEnv(t, oa), args("--workspace", dir, "x")...)
			require.Equal(t, 2, res.code, res)
			assert.Contains(t, res.stderr, "agent.workspace", res)
			assert.Contains(t, res.stderr, "use a project directory, not a", res)
			assert.Contains(t, res.stderr, "pass a new directory for the task instead (mkdir ~/agent-work; --workspace ~/agent-work)", res)
			assert.Zero(t, oa.count())
			assert.False(t, strings.Contains(res.stderr, "internal error"))
		})
	}
}
