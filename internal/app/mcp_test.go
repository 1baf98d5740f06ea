package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/tools/mcp"
)

// authLog records the Authorization headers a server received.
type authLog struct {
	mu  sync.Mutex
	got []string
}

func (a *authLog) add(v string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, v)
}

func (a *authLog) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.got...)
}

// mcpHTTPServer serves a go-sdk server with an "echo" tool over streamable
// HTTP, and records the Authorization headers.
func mcpHTTPServer(t *testing.T, auth *authLog) string {
	s := sdk.NewServer(&sdk.Implementation{Name: "echo", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "echo", Description: "Echoes.", InputSchema: &jsonschema.Schema{Type: "object"}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth != nil {
			auth.add(r.Header.Get("Authorization"))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func TestMCPServers(t *testing.T) {
	file := `
mcp_servers:
  - name: files
    command: npx
    args: [-y, "@modelcontextprotocol/server-filesystem", /data]
    env: {TOKEN: "${DG_APP_TEST_TOKEN}", PLAIN: "p"}
  - name: web
    url: https://mcp.example.com/mcp
    headers: {Authorization: "Bearer ${DG_APP_TEST_TOKEN}"}
    timeout: 90s
`
	cfg := load(t, file, map[string]string{"DG_APP_TEST_TOKEN": "tok-from-env"})
	servers, err := MCPServers(cfg)
	require.NoError(t, err)
	assert.Equal(t, []mcp.Server{
		{Name: "files", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/data"}, Env: map[string]string{"TOKEN": "tok-from-env", "PLAIN": "p"}, Timeout: config.DefaultMCPTimeout},
		{Name: "web", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer tok-from-env"}, Timeout: 90e9},
	}, servers)

	cfg = load(t, file, nil, "--mcp", "web", "--mcp", "git=uvx mcp-server-git --repository .")
	servers, err = MCPServers(cfg)
	require.NoError(t, err)
	require.Len(t, servers, 2)
	assert.Equal(t, "web", servers[0].Name)
	assert.Equal(t, mcp.Server{Name: "git", Command: "uvx", Args: []string{"mcp-server-git", "--repository", "."}, Timeout: config.DefaultMCPTimeout}, servers[1])

	cfg = load(t, file, nil, "--mcp", "none")
	servers, err = MCPServers(cfg)
	require.NoError(t, err)
	assert.Empty(t, servers)

	// An unset variable, an unknown name: setup errors that say what to do.
	cfg = load(t, file, map[string]string{"DG_APP_TEST_TOKEN": ""}, "--mcp", "files")
	_, err = MCPServers(cfg)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrSetup))
	assert.Equal(t, "MCP server files: env.TOKEN refers to ${DG_APP_TEST_TOKEN}, which is not set: set the variable, or write the value in the config file", err.Error())

	cfg = load(t, file, nil, "--mcp", "nope")
	_, err = MCPServers(cfg)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrSetup))
	assert.True(t, errors.Is(err, config.ErrInvalid))
	assert.Contains(t, err.Error(), "mcp_servers configures files, web")
}

func TestConnectMCP(t *testing.T) {
	var auths authLog
	a := mcpHTTPServer(t, &auths)
	b := mcpHTTPServer(t, nil)
	file := "mcp_servers:\n" +
		"  - {name: a, url: \"" + a + "\", headers: {Authorization: \"Bearer ${DG_APP_TEST_TOKEN}\"}}\n" +
		"  - {name: b, url: \"" + b + "\"}\n"
	set, err := OpenMCP(context.Background(), load(t, file, map[string]string{"DG_APP_TEST_TOKEN": "tok-42"}), nil)
	require.NoError(t, err)
	defer set.Close()
	assert.Equal(t, []string{"a", "b"}, set.Names())
	assert.Equal(t, "a (1 tool), b (1 tool)", set.Summary())
	dyn := set.Dynamic()
	require.Len(t, dyn, 2)
	coll, err := dyn[1].Collection(context.Background())
	require.NoError(t, err)
	echo, ok := coll.Get("b.echo")
	require.True(t, ok)
	res, err := echo.Run(context.Background(), []byte(`{"x":1}`))
	require.NoError(t, err)
	assert.JSONEq(t, `{"x":1}`, res.Output)
	assert.Contains(t, auths.all(), "Bearer tok-42", "the expanded header reached server a")

	// No servers: an empty set that is safe to use.
	empty, err := ConnectMCP(context.Background(), nil, nil)
	require.NoError(t, err)
	assert.Nil(t, empty.Dynamic())
	assert.Empty(t, empty.Summary())
	empty.Close()
	var none *MCPSet
	assert.Nil(t, none.Dynamic())
	none.Close()

	// One server fails: a setup error naming it; the other is stopped.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	_, err = ConnectMCP(context.Background(), []mcp.Server{{Name: "ok", URL: b}, {Name: "dead", URL: dead, Headers: map[string]string{"Authorization": "Bearer hdr-secret-9"}}}, nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrSetup))
	assert.Contains(t, err.Error(), "mcp: server dead: connecting: ")
	assert.Contains(t, err.Error(), "(--mcp none runs the agent without MCP servers)")
	assert.NotContains(t, err.Error(), "hdr-secret-9")

	// Two servers whose tools' names would clash.
	_, err = ConnectMCP(context.Background(), []mcp.Server{{Name: "1x", URL: b}, {Name: "_1x", URL: b}}, nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrSetup))
	assert.Contains(t, err.Error(), "their tools' names clash")
}
