package nodes_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/tools"
)

// server is a dynamic tool set, as an MCP server's: n tools named
// name.tool0, name.tool1, ….
type server struct{ c *tools.Collection }

func (s server) Collection(context.Context) (*tools.Collection, error) { return s.c, nil }

func newServer(t *testing.T, name string, n int) server {
	t.Helper()
	var ts []tools.Tool
	for i := range n {
		ts = append(ts, constant(fmt.Sprintf("%s.tool%d", name, i)))
	}
	c, err := tools.NewCollection(ts...)
	require.NoError(t, err)
	return server{c}
}

func offered(m *fake.Model, call int) []string {
	var names []string
	for _, d := range m.Calls()[call].Request.Tools {
		names = append(names, d.Name)
	}
	return names
}

func TestAgentToolsAllowAndDeny(t *testing.T) {
	m := fake.New(fake.ToolCalls(fake.ToolCall("big.tool1", lookupArgs{Key: "k"})), fake.ToolCalls(terminate("success", "ok"))).Strict()
	col, err := tools.NewCollection(constant("lookup"), constant("other"))
	require.NoError(t, err)
	a, err := nodes.NewAgent(nodes.AgentConfig{Model: m, Tools: col, Dynamic: []tools.Dynamic{newServer(t, "big", 150), newServer(t, "small", 2)},
		AllowTools: []string{"lookup", "big.tool1", "small.*"}, DenyTools: []string{"small.tool0"}})
	require.NoError(t, err)
	res, err := a.Run(context.Background(), "task", nil)
	require.NoError(t, err)
	assert.Equal(t, nodes.AgentSuccess, res.Status)
	assert.ElementsMatch(t, []string{"lookup", "terminate", "big.tool1", "small.tool1"}, offered(m, 0))
}

func TestAgentToolsCapNamesTheLimit(t *testing.T) {
	m := fake.New(fake.Text("never")).Strict()
	a, err := nodes.NewAgent(nodes.AgentConfig{Model: m, Dynamic: []tools.Dynamic{newServer(t, "big", 150)}})
	require.NoError(t, err)
	res, err := a.Run(context.Background(), "task", nil)
	require.ErrorIs(t, err, nodes.ErrTooManyTools)
	assert.Contains(t, err.Error(), "offers 151 tools but the model accepts at most 128")
	assert.Contains(t, err.Error(), "server.*")
	assert.Empty(t, m.Calls(), "the provider is never sent more tools than it accepts")
	assert.Equal(t, nodes.AgentError, res.Status)

	// Narrowed to one server's tools, the run goes through.
	m = fake.New(fake.Text("fine")).Strict()
	a, err = nodes.NewAgent(nodes.AgentConfig{Model: m, Dynamic: []tools.Dynamic{newServer(t, "big", 150)}, AllowTools: []string{"big.tool1?"}})
	require.NoError(t, err)
	res, err = a.Run(context.Background(), "task", nil)
	require.NoError(t, err)
	assert.Equal(t, "fine", res.Answer)
	assert.Len(t, offered(m, 0), 11, "big.tool10–19 and terminate")
}
