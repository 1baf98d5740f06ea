//go:build unix

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigMCPServer is an MCP server (stdio, newline-delimited JSON-RPC) with
// 150 tools tool0…tool149 and one tool, look, annotated read-only.
const bigMCPServer = `import json, sys
tools = [{"name": "tool%d" % i, "description": "Tool %d." % i, "inputSchema": {"type": "object"}} for i in range(150)]
tools.append({"name": "look", "description": "Looks.", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}})
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m = msg.get("method")
    if m == "initialize":
        res = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "big", "version": "1"}}
    elif m == "tools/list":
        res = {"tools": tools}
    elif m == "tools/call":
        res = {"content": [{"type": "text", "text": "ran " + msg["params"]["name"]}]}
    else:
        res = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": res}) + "\n")
    sys.stdout.flush()
`

// offeredTools are the tool names of an OpenAI request.
func offeredTools(t *testing.T, body []byte) []string {
	t.Helper()
	var req openaiRequest
	require.NoError(t, json.Unmarshal(body, &req))
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Function.Name)
	}
	return names
}

// Tool control with an MCP server of 151 tools: without a narrower set a
// step would offer more than OpenAI's 128 and fails naming the limit
// before the model is called; --tools narrows MCP tools (server.tool,
// patterns) and --deny-tools removes them; --approve-tools asks about a
// tool the server does not annotate read-only, not about one it does.
func TestE2EAgentToolControlWithABigMCPServer(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: the test's MCP server is a Python script")
	}
	server := filepath.Join(t.TempDir(), "big.py")
	require.NoError(t, os.WriteFile(server, []byte(bigMCPServer), 0o644))
	mcp := "big=" + python + " " + server
	look := oaCall{Name: "big__look", Args: `{}`}
	write := oaCall{Name: "big__tool7", Args: `{}`}
	oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply {
		if len(c.req.toolResults()) == 0 {
			return oaReply{ToolCalls: []oaCall{look, write}}
		}
		return oaReply{ToolCalls: []oaCall{terminate("success", "Results: "+strings.Join(c.req.toolResults(), " | "))}}
	})
	envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
	agent := func(args ...string) result {
		return run(t, envv, append([]string{"agent", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(), "--mcp", mcp}, args...)...)
	}

	res := agent("--no-save", "Use the tools")
	require.Equal(t, exitFailed, res.code, res)
	assert.Contains(t, res.stderr, "MCP servers: big (151 tools)")
	assert.Contains(t, res.stderr, "the step offers 155 tools but the model accepts at most 128")
	assert.Contains(t, res.stderr, "--tools on the command line, e.g. server.* or server.tool for MCP tools) or a deny-list (AgentConfig.DenyTools; --deny-tools)")
	assert.Empty(t, oa.all(), "the provider is never sent more tools than it accepts")

	res = agent("--no-save", "--tools", "big.tool7,big.look", "Use the tools")
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stdout, "ran tool7")
	assert.Contains(t, res.stdout, "ran look")
	reqs := oa.all()
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{"terminate", "big__tool7", "big__look"}, offeredTools(t, reqs[0].Body), "only the named MCP tools, and terminate")

	res = agent("--no-save", "--tools", "big.tool1*", "--deny-tools", "big.tool1?,fetch_page", "Use the tools")
	require.Equal(t, 0, res.code, res)
	offered := offeredTools(t, oa.all()[2].Body)
	assert.ElementsMatch(t, []string{"terminate", "big__tool1", "big__tool100", "big__tool101", "big__tool102", "big__tool103", "big__tool104",
		"big__tool105", "big__tool106", "big__tool107", "big__tool108", "big__tool109", "big__tool110", "big__tool111", "big__tool112", "big__tool113",
		"big__tool114", "big__tool115", "big__tool116", "big__tool117", "big__tool118", "big__tool119", "big__tool120", "big__tool121", "big__tool122",
		"big__tool123", "big__tool124", "big__tool125", "big__tool126", "big__tool127", "big__tool128", "big__tool129", "big__tool130", "big__tool131",
		"big__tool132", "big__tool133", "big__tool134", "big__tool135", "big__tool136", "big__tool137", "big__tool138", "big__tool139", "big__tool140",
		"big__tool141", "big__tool142", "big__tool143", "big__tool144", "big__tool145", "big__tool146", "big__tool147", "big__tool148", "big__tool149"}, offered)

	res = agent("--tools", "big.*", "--deny-tools", "big.tool1*", "--approve-tools", "Use the tools")
	require.Equal(t, exitNeedsInput, res.code, res)
	assert.Contains(t, res.stderr, "waits for your approval of a tool call:\n  The agent wants to run big.tool7 {}.")
	assert.NotContains(t, res.stderr, "wants to run big.look", "a read-only tool is not asked about")
	id := runIDOf(t, res.stderr)
	res = run(t, envv, "resume", id, "--answer", "reject: not tool7")
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stdout, "ran look")
	assert.Contains(t, res.stdout, "rejected it: not tool7")
	assert.False(t, slices.Contains(offeredTools(t, oa.all()[4].Body), "big__tool10"), "denied")
}
