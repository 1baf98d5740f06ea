//go:build unix

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/npmtest"
)

// research agent --mcp: the tools of an MCP server from npm
// (server-everything, over stdio) reach the model as server.tool, travel
// on the OpenAI wire as server__tool, and their results come back.
func TestE2EAgentWithMCPServer(t *testing.T) {
	t.Parallel()
	bin := npmtest.Bin(t, npmtest.ServerEverything, npmtest.ServerEverythingVersion, "mcp-server-everything")
	node := npmtest.Node(t)
	oa := newFakeOpenAI(t, agentScript(
		oaReply{Content: "Let me echo.", ToolCalls: []oaCall{{Name: "everything__echo", Args: `{"message":"hi from the agent"}`}}},
		oaReply{ToolCalls: []oaCall{terminate("success", "The server echoed it.")}},
	))
	e := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
	res := run(t, e, "agent", "--no-save", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(),
		"--mcp", "everything="+node+" "+bin+" stdio", "Echo a greeting through the MCP server")
	require.Equal(t, 0, res.code, res)
	assert.Equal(t, "The server echoed it.\n", res.stdout)
	assertInOrder(t, res.stderr, "MCP servers: everything (", "→ everything.echo", "← everything.echo", "Echo: hi from the agent", "Finished: success")

	calls := oa.all()
	require.Len(t, calls, 2)
	var req openaiRequest
	require.NoError(t, json.Unmarshal(calls[0].Body, &req))
	var offered []string
	for _, tl := range req.Tools {
		offered = append(offered, tl.Function.Name)
	}
	assert.Contains(t, offered, "everything__echo")
	require.NoError(t, json.Unmarshal(calls[1].Body, &req))
	results := strings.Join(req.toolResults(), "\n")
	assert.Contains(t, results, "Echo: hi from the agent")

	// An unknown server name is a usage error naming the choices.
	res = run(t, e, "agent", "--no-save", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(), "--mcp", "nosuch", "x")
	require.Equal(t, 2, res.code, res)
	assert.Contains(t, res.stderr, "nosuch")
}
