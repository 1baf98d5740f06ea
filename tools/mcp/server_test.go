package mcp

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/tools"
)

func TestToolNames(t *testing.T) {
	long := strings.Repeat("a", 70)
	for _, c := range []struct{ server, remote, want string }{
		{"files", "read_file", "files.read_file"},
		{"files", "get-tiny-image", "files.get-tiny-image"},
		{"files", "read file!", "files.read_file_"},
		{"files", "ünïcode", "files._n_code"},
		{"1st", "x", "_1st.x"},
		{"-dash", "x", "_-dash.x"},
		{"s", "a/b:c", "s.a_b_c"},
	} {
		got := toolName(c.server, c.remote)
		assert.Equal(t, c.want, got, c)
		assert.NoError(t, tools.CheckName(got))
	}
	a, b := toolName("s", long), toolName("s", long+"b")
	assert.Len(t, a, 64)
	assert.NotEqual(t, a, b, "long names keep apart")
	assert.NoError(t, tools.CheckName(a))
	assert.Equal(t, a, toolName("s", long), "stable")

	taken := map[string]bool{"s.x": true, "s.x_2": true}
	assert.Equal(t, "s.x_3", uniqueName("s.x", taken))
	assert.Equal(t, "s.y", uniqueName("s.y", taken))
	full := strings.Repeat("b", 64)
	got := uniqueName(full, map[string]bool{full: true})
	assert.Len(t, got, 64)
	assert.True(t, strings.HasSuffix(got, "_2"))
}

// Two remote names that sanitise alike stay two tools.
func TestSanitisedNamesCollide(t *testing.T) {
	c := &Client{srv: Server{Name: "s"}, log: slog.New(slog.DiscardHandler)}
	obj := map[string]any{"type": "object"}
	ts := c.buildTools([]*sdk.Tool{{Name: "a b", InputSchema: obj}, {Name: "a_b", InputSchema: obj}, {Name: "a!b", InputSchema: obj}})
	coll := c.collection(ts)
	assert.Equal(t, []string{"s.a_b", "s.a_b_2", "s.a_b_3"}, coll.Names())
	var remotes []string
	for _, tl := range coll.Tools() {
		r, _ := RemoteName(tl)
		remotes = append(remotes, r)
	}
	assert.Equal(t, []string{"a b", "a_b", "a!b"}, remotes)
}

func TestToResult(t *testing.T) {
	for _, c := range []struct {
		name string
		in   *sdk.CallToolResult
		want tools.Result
	}{
		{"texts joined", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.TextContent{Text: "b"}}}, tools.Result{Output: "a\nb"}},
		{"empty", &sdk.CallToolResult{}, tools.Result{}},
		{"error without text", &sdk.CallToolResult{IsError: true}, tools.Result{Error: "the tool reported an error without saying what"}},
		{"structured ignored beside text", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "t"}}, StructuredContent: map[string]any{"a": 1}}, tools.Result{Output: "t"}},
		{"structured array", &sdk.CallToolResult{StructuredContent: []any{1, 2}}, tools.Result{Output: "[\n  1,\n  2\n]"}},
		{"audio", &sdk.CallToolResult{Content: []sdk.Content{&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte{1, 2}}}}, tools.Result{Output: "[audio audio/wav, 2 bytes: not shown]"}},
		{"image resource", &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "https://x.test/p.png", MIMEType: "image/png", Blob: tinyPNG}}}},
			tools.Result{Output: "Resource https://x.test/p.png (image/png, attached)", Images: []schemas.Image{{MIMEType: "image/png", Data: tinyPNG}}, Sources: []tools.Source{{URL: "https://x.test/p.png"}}}},
		{"invalid utf-8", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a\xffb"}}}, tools.Result{Output: "a\uFFFDb"}},
	} {
		assert.Equal(t, c.want, toResult(c.in), c.name)
	}
}

func TestServerValidate(t *testing.T) {
	ok := []Server{
		{Name: "files", Command: "npx", Args: []string{"-y", "pkg"}, Env: map[string]string{"TOKEN": "x"}},
		{Name: "search_1-x", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}, Timeout: time.Minute},
	}
	for _, s := range ok {
		assert.NoError(t, s.Validate(), s)
	}
	for _, c := range []struct {
		s    Server
		want string
	}{
		{Server{Name: "", Command: "x"}, `mcp: invalid server (no name): name: use 1 to 32 letters, digits, '_' or '-'`},
		{Server{Name: "a.b", Command: "x"}, `"a.b": name:`},
		{Server{Name: strings.Repeat("n", 33), Command: "x"}, "name:"},
		{Server{Name: "s"}, `"s": set command (a program speaking MCP on stdin/stdout) or url (a streamable-HTTP endpoint)`},
		{Server{Name: "s", Command: "x", URL: "https://h/mcp"}, "set command or url, not both"},
		{Server{Name: "s", URL: "ftp://h/mcp"}, "url: use an http or https URL"},
		{Server{Name: "s", URL: "https://user:pw@h/mcp"}, "put credentials in headers, not in the URL"},
		{Server{Name: "s", URL: "https://h/mcp", Args: []string{"x"}}, "args, env and dir belong to a command"},
		{Server{Name: "s", Command: "x", Headers: map[string]string{"A": "b"}}, "headers belong to a url server"},
		{Server{Name: "s", URL: "https://h/mcp", Headers: map[string]string{"Bad Name": "v"}}, `headers: "Bad Name" is not a header name`},
		{Server{Name: "s", URL: "https://h/mcp", Headers: map[string]string{"A": "secret\r\nX: y"}}, "headers: the value of A holds a line break"},
		{Server{Name: "s", Command: "x", Env: map[string]string{"A=B": "v"}}, `env: "A=B" is not a variable name`},
		{Server{Name: "s", Command: "x", Timeout: -time.Second}, "timeout:"},
	} {
		err := c.s.Validate()
		require.Error(t, err, c.s)
		assert.ErrorIs(t, err, ErrInvalidServer)
		assert.Contains(t, err.Error(), c.want)
		assert.NotContains(t, err.Error(), "secret")
	}
}

func TestServerPrintsNoSecrets(t *testing.T) {
	s := Server{Name: "files", Command: "npx", Args: []string{"-y", "@scope/server", "/home/me/my notes"}, Env: map[string]string{"TOKEN": "env-secret-1", "B": "env-secret-2"}, Dir: "/tmp"}
	h := Server{Name: "search", URL: "https://mcp.example.com/mcp?key=query-secret&v=1", Headers: map[string]string{"Authorization": "Bearer hdr-secret"}, Timeout: time.Minute}
	assert.Equal(t, `files (stdio: npx -y @scope/server "/home/me/my notes"; env B, TOKEN; dir /tmp)`, s.String())
	assert.Equal(t, `search (http: https://mcp.example.com/mcp?key=xxxxx&v=xxxxx; headers Authorization; timeout 1m0s)`, h.String())
	var buf strings.Builder
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	logger.Info("x", "server", s, "http", h)
	for _, out := range []string{fmt.Sprint(s, h), fmt.Sprintf("%v %+v %#v %s", s, h, s, h), buf.String()} {
		for _, secret := range []string{"env-secret-1", "env-secret-2", "query-secret", "hdr-secret"} {
			assert.NotContains(t, out, secret)
		}
	}
	c := &Client{srv: h, secrets: h.secrets()}
	assert.Equal(t, "Post https://mcp.example.com/mcp?key=xxxxx&v=xxxxx: got [redacted] back, and [redacted]",
		c.scrub("Post https://mcp.example.com/mcp?key=query-secret&v=1: got Bearer hdr-secret back, and hdr-secret"))
}

func TestServerEnv(t *testing.T) {
	environ := []string{"PATH=/usr/bin", "HOME=/home/me", "GEMINI_API_KEY=sk-1", "LC_ALL=C", "npm_config_cache=/c", "XDG_CACHE_HOME=/x", "AWS_SECRET_ACCESS_KEY=s", "TOKEN=old", "NOEQUALS"}
	got := serverEnv(environ, map[string]string{"TOKEN": "new", "EXTRA": "1"})
	assert.Equal(t, []string{"PATH=/usr/bin", "HOME=/home/me", "LC_ALL=C", "npm_config_cache=/c", "XDG_CACHE_HOME=/x", "EXTRA=1", "TOKEN=new"}, got)
}
