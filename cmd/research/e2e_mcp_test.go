package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// research mcp, end to end: the binary, started by the go-sdk's client as
// an MCP client starts it (stdio), or serving streamable HTTP, against the
// fake providers.

// mcpClient is a go-sdk client that records progress notifications.
type mcpClient struct {
	*mcp.Client
	mu       sync.Mutex
	progress []string
}

func newMCPClient() *mcpClient {
	c := &mcpClient{}
	c.Client = mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, req.Params.Message)
			c.mu.Unlock()
		},
	})
	return c
}

func (c *mcpClient) messages() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.progress)
}

// stdioSession starts bin mcp as an MCP client does, with envv, and
// connects to it; stderr collects the server's stderr.
func stdioSession(t *testing.T, c *mcpClient, bin string, envv []string, args ...string) (*mcp.ClientSession, *exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Env = envv
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "stderr:\n%s", stderr.String())
	t.Cleanup(func() {
		_ = cs.Close()
		if cmd.ProcessState == nil && cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	})
	return cs, cmd, stderr
}

func contentText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		require.True(t, ok, "content %T", c)
		parts = append(parts, tc.Text)
	}
	return strings.Join(parts, "\n")
}

// Over stdio: the tools, a deep research against the fake Gemini with its
// progress and cited report, the SSRF guard of fetch_page, a cancelled
// call whose request to Gemini ends, and a clean exit when the client
// closes.
func TestE2EMCPStdio(t *testing.T) {
	t.Parallel()
	g := newFakeGemini(t)
	envv := geminiEnv(t, g, nil)
	c := newMCPClient()
	cs, cmd, stderr := stdioSession(t, c, binary, envv)
	ctx := context.Background()

	init := cs.InitializeResult()
	assert.Equal(t, "deepgraph", init.ServerInfo.Name)
	assert.Contains(t, init.ServerInfo.Version, testVersion)
	assert.Contains(t, init.Instructions, "web_search is not offered", "Gemini grounding and no search provider")
	tl, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tl.Tools {
		names = append(names, tool.Name)
	}
	assert.ElementsMatch(t, []string{"deep_research", "fetch_page"}, names)

	params := &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "Wer gewann die Euro 2024 und wer schoss die meisten Tore?"}}
	params.SetProgressToken("e2e")
	res, err := cs.CallTool(ctx, params)
	require.NoError(t, err)
	report := contentText(t, res)
	require.False(t, res.IsError, report)
	assert.Contains(t, report, "Spanien gewann die Euro 2024")
	assertCitations(t, report, g.uris())
	var out struct {
		Question string `json:"question"`
		Sources  []struct {
			URL   string `json:"url"`
			Title string `json:"title"`
		} `json:"sources"`
		Queries    []string `json:"queries"`
		Loops      int      `json:"loops"`
		Incomplete bool     `json:"incomplete"`
	}
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &out))
	assert.Equal(t, []string{"Euro 2024 Sieger", "Euro 2024 Torschützenkönig", "Euro 2024 Tore Anzahl"}, out.Queries)
	assert.Equal(t, 2, out.Loops)
	assert.False(t, out.Incomplete)
	require.NotEmpty(t, out.Sources)
	assert.True(t, g.uris()[out.Sources[0].URL])

	require.Eventually(t, func() bool { return slices.Contains(c.messages(), "Reflection 2: sufficient") }, 30*time.Second, 10*time.Millisecond)
	msgs := c.messages()
	assert.Contains(t, msgs, `Queries: "Euro 2024 Sieger" · "Euro 2024 Torschützenkönig"`)
	assert.Contains(t, msgs, `Reflection 1: not sufficient — gap: Die Anzahl der Tore fehlt.; follow-ups: "Euro 2024 Tore Anzahl"`)
	assert.Contains(t, msgs, "Finalizing the answer")

	// fetch_page refuses this machine's addresses.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fetch_page", Arguments: map[string]any{"url": g.srv.URL + "/secret"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, contentText(t, res), "refused")

	// A cancelled call ends the run: its request to Gemini goes away.
	var hanging atomic.Bool
	hanging.Store(true)
	started, gone := make(chan struct{}, 1), make(chan struct{}, 1)
	g.setScript(func(gc geminiCall) bool {
		if !hanging.Load() || !gc.req.grounded() || researchQuery(gc.req.prompt()) != "Euro 2024 Torschützenkönig" {
			return false
		}
		started <- struct{}{}
		select {
		case <-gc.r.Context().Done():
			gone <- struct{}{}
		case <-time.After(30 * time.Second):
		}
		return true
	})
	callCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "Wer gewann die Euro 2024?"}})
		errc <- err
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatalf("the research never searched:\n%s", stderr.String())
	}
	cancel()
	select {
	case <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the run's request to Gemini did not end after the call was cancelled")
	}
	assert.ErrorIs(t, <-errc, context.Canceled)

	// The client closes stdin: the server exits cleanly.
	require.NoError(t, cs.Close())
	require.NotNil(t, cmd.ProcessState, "the server exited")
	assert.Equal(t, 0, cmd.ProcessState.ExitCode(), stderr.String())
	assert.Contains(t, stderr.String(), "MCP server deepgraph on stdio (deep_research, fetch_page)")
	assert.NotContains(t, stderr.String(), geminiKey)
	assert.NotContains(t, stderr.String(), "level=ERROR")
}

// web_search over stdio, with a search provider configured: the agent's
// tool, against the fake SearXNG.
func TestE2EMCPWebSearch(t *testing.T) {
	t.Parallel()
	_, _, _, vars := searchSetup(t)
	c := newMCPClient()
	cs, _, _ := stdioSession(t, c, binary, env(t, vars), "--model", "openai:gpt-4.1-mini")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "web_search", Arguments: map[string]any{"query": "raft leader election", "max_results": 2}})
	require.NoError(t, err)
	body := contentText(t, res)
	require.False(t, res.IsError, body)
	assert.Contains(t, body, `2 results for "raft leader election" (searxng):`)
	assert.Contains(t, body, "- Page 1 about raft leader election")
	assert.Contains(t, body, "SNIPPET-1 for raft leader election.")
	assert.NotContains(t, body, "Page 3 about")
	assert.NotContains(t, cs.InitializeResult().Instructions, "web_search is not offered")
}

var mcpServingRe = regexp.MustCompile(`Serving MCP at (http://127\.0\.0\.1:\d+)/mcp`)

// Over streamable HTTP: a deep research, the Host check, the token, and
// SIGTERM; an address beyond loopback without a token refuses to start.
func TestE2EMCPHTTP(t *testing.T) {
	t.Parallel()
	g := newFakeGemini(t)
	envv := geminiEnv(t, g, nil)
	s := startBin(t, envv, "mcp", "--http", "127.0.0.1:0")
	s.waitStderr(t, "Serving MCP at http://", 20*time.Second)
	base := mcpServingRe.FindStringSubmatch(s.stderr.String())[1]
	// The next line may not be written yet when the first is read.
	s.waitStderr(t, "No token: only this machine can reach it", 5*time.Second)

	c := newMCPClient()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	require.NoError(t, err)
	params := &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "Wer gewann die Euro 2024?", "effort": "low"}}
	params.SetProgressToken(1)
	res, err := cs.CallTool(ctx, params)
	require.NoError(t, err)
	report := contentText(t, res)
	require.False(t, res.IsError, report)
	assert.Contains(t, report, "Spanien gewann die Euro 2024")
	assertCitations(t, report, g.uris())
	require.Eventually(t, func() bool { return slices.Contains(c.messages(), "Finalizing the answer") }, 30*time.Second, 10*time.Millisecond)

	status, body := httpStatus(t, "GET", base+"/healthz", "evil.example:80", "")
	assert.Equal(t, http.StatusMisdirectedRequest, status, "DNS rebinding: %s", body)
	status, _ = httpStatus(t, "GET", base+"/healthz", "", "")
	assert.Equal(t, http.StatusOK, status)
	status, body = httpStatus(t, "POST", base+"/mcp", "", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, status, "a cross-site origin: %s", body)

	// SIGTERM with a session open: a clean stop.
	// (The stop is bounded by construction: mcp.go gives the HTTP server's
	// Shutdown 1 s.)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	res2 := s.wait(t, 20*time.Second)
	assert.Equal(t, 0, res2.code, res2)
	assert.Contains(t, res2.stderr, "Stopped")
	assert.Empty(t, res2.stdout)
	_ = cs.Close()

	// A token: requests without it are refused.
	const token = "e2e-mcp-token-0123456789"
	s2 := startBin(t, geminiEnv(t, g, map[string]string{"DEEPGRAPH_SERVE_TOKEN": token}), "mcp", "--http", "127.0.0.1:0")
	s2.waitStderr(t, "Serving MCP at http://", 20*time.Second)
	base2 := mcpServingRe.FindStringSubmatch(s2.stderr.String())[1]
	assert.NotContains(t, s2.stderr.String(), "No token")
	_, err = newMCPClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base2 + "/mcp", MaxRetries: -1}, nil)
	assert.Error(t, err, "no token, no session")
	cs2, err := newMCPClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base2 + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token: token}}}, nil)
	require.NoError(t, err)
	_, err = cs2.ListTools(ctx, nil)
	require.NoError(t, err)
	_ = cs2.Close()
	require.NoError(t, s2.cmd.Process.Signal(syscall.SIGTERM))
	res3 := s2.wait(t, 20*time.Second)
	assert.Equal(t, 0, res3.code, res3)
	assert.NotContains(t, res3.all(), token)

	// Beyond loopback, no token: it refuses to start, saying how.
	bad := run(t, envv, "mcp", "--http", "0.0.0.0:0")
	assert.Equal(t, 2, bad.code, bad)
	assert.Empty(t, bad.stdout)
	assert.Contains(t, bad.stderr, "DEEPGRAPH_SERVE_TOKEN")
	assert.Contains(t, bad.stderr, "serve.token")
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// httpStatus sends a bodiless request with a Host and an Origin (when not
// empty) and returns the status and body.
func httpStatus(t *testing.T, method, url, host, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

// In stdio mode stdout carries the protocol and nothing else, even with
// debug logging: every line is a JSON-RPC message.
func TestE2EMCPStdoutIsProtocol(t *testing.T) {
	t.Parallel()
	g := newFakeGemini(t)
	cmd := exec.Command(binary, "-v", "mcp")
	cmd.Env = geminiEnv(t, g, nil)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	require.NoError(t, cmd.Start())
	_, err = io.WriteString(stdin, strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fetch_page","arguments":{"url":"http://127.0.0.1:1/"}}}`,
	}, "\n")+"\n")
	require.NoError(t, err)
	// The answers come before stdin closes: a client closing stdin has gone.
	require.Eventually(t, func() bool { return strings.Count(stdout.String(), "\n") >= 3 }, 30*time.Second, 10*time.Millisecond,
		"stdout: %s\nstderr: %s", stdout, stderr)
	require.NoError(t, stdin.Close())
	require.NoError(t, cmd.Wait(), stderr.String())
	assert.Contains(t, stderr.String(), "level=DEBUG", "debug logging is on, on stderr")
	ids := map[float64]bool{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var msg struct {
			JSONRPC string  `json:"jsonrpc"`
			ID      float64 `json:"id"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &msg), "stdout carries a line that is not JSON-RPC: %q", line)
		assert.Equal(t, "2.0", msg.JSONRPC)
		ids[msg.ID] = true
	}
	assert.Equal(t, map[float64]bool{1: true, 2: true, 3: true}, ids, stdout.String())
	assert.Contains(t, stdout.String(), "refused")
}

// TestE2EMCPStdioMalformedMessages: research mcp answers each line it
// cannot use — not JSON, a JSON array or string, an object without
// "jsonrpc", a message over the 16 MiB limit — with a JSON-RPC error, and
// goes on: the requests after each are answered, and the process ends only
// when its input does, with status 0.
func TestE2EMCPStdioMalformedMessages(t *testing.T) {
	t.Parallel()
	g := newFakeGemini(t)
	cmd := exec.Command(binary, "mcp")
	cmd.Env = geminiEnv(t, g, nil)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		"hello world",
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`[1,2]`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		`"a string"`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`,
		`{"id":5,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fetch_page","arguments":{"url":"http://example.com/` + strings.Repeat("a", 17<<20) + `"}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`,
	}
	for _, l := range lines {
		_, err := io.WriteString(stdin, l+"\n")
		require.NoError(t, err, "the server stopped reading: %s", stderr)
	}
	// The error code answering each id (0: a result); id 5 lacks
	// "jsonrpc", id 7 is over the limit.
	want := map[string]int{`1`: 0, `2`: 0, `3`: 0, `4`: 0, `5`: -32600, `6`: 0, `7`: -32600, `8`: 0}
	require.Eventually(t, func() bool { return strings.Count(stdout.String(), "\n") >= 11 }, 30*time.Second, 10*time.Millisecond,
		"stdout: %.2000s\nstderr: %s", stdout, stderr)
	got := map[string][]int{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &msg), "stdout carries a line that is not JSON-RPC: %q", line)
		assert.Equal(t, "2.0", msg.JSONRPC)
		code := 0
		if msg.Error != nil {
			code = msg.Error.Code
		}
		got[string(msg.ID)] = append(got[string(msg.ID)], code)
	}
	assert.Equal(t, []int{-32700, -32600, -32600}, got["null"], "hello world, the array and the string")
	for id, code := range want {
		assert.Equal(t, []int{code}, got[id], "id %s", id)
	}
	require.NoError(t, stdin.Close())
	require.NoError(t, cmd.Wait(), stderr.String())
	assert.Contains(t, stderr.String(), "refused an MCP message")
}
