package mcpserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/server"
)

// httpServer serves a server with opts over HTTP on loopback with guard.
func httpServer(t *testing.T, ctx context.Context, opts Options, guard server.GuardOptions) *httptest.Server {
	t.Helper()
	srv, err := New(ctx, opts)
	require.NoError(t, err)
	ts := httptest.NewServer(Handler(srv, HTTPOptions{Guard: guard}))
	t.Cleanup(func() {
		CloseSessions(srv)
		ts.Close()
	})
	return ts
}

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func httpClient(t *testing.T, endpoint, token string, onProgress func(*mcp.ProgressNotificationParams)) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Transport: http.DefaultTransport}
	if token != "" {
		hc.Transport = bearer{token: token, next: http.DefaultTransport}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if onProgress != nil {
				onProgress(req.Params)
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// Over streamable HTTP: tools, a deep research with its progress, and a
// cancelled one.
func TestHTTP(t *testing.T) {
	s := newSearch()
	ts := httpServer(t, context.Background(), fullOptions(s), server.GuardOptions{Loopback: true})
	var mu sync.Mutex
	var msgs []string
	cs, err := httpClient(t, ts.URL+PathMCP, "", func(p *mcp.ProgressNotificationParams) {
		mu.Lock()
		msgs = append(msgs, p.Message)
		mu.Unlock()
	})
	require.NoError(t, err)
	tl, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	assert.Len(t, tl.Tools, 3)

	params := &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "How does Raft elect a leader?", "effort": "low"}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(context.Background(), params)
	require.NoError(t, err)
	require.False(t, res.IsError, text(t, res))
	assert.Contains(t, text(t, res), "## Sources")
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(msgs, `Queries: "raft leader election"`) && slices.Contains(msgs, "Reflection 1: sufficient") && len(msgs) == 6
	}, 30*time.Second, 5*time.Millisecond, "the progress notifications arrive")

	s.block = "raft leader election" // no race: no search runs now
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "deep_research", Arguments: map[string]any{"question": "again?", "effort": "low"}})
		errc <- err
	}()
	waitSearch(t, s, "raft leader election", "raft leader election")
	cancel()
	select {
	case err := <-s.ended:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(30 * time.Second):
		t.Fatal("the research did not stop after the client cancelled")
	}
	assert.Error(t, <-errc)
}

func get(t *testing.T, method, url string, header ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp.Header
}

// The HTTP API's security: a token when one is set (the health check is
// open), the loopback Host check, no cross-site origin but the listed ones.
func TestHTTPSecurity(t *testing.T) {
	ts := httpServer(t, context.Background(), fullOptions(newSearch()), server.GuardOptions{
		Token: "s3cret-token", Loopback: true, CORSOrigins: []string{"https://app.example.com"}})
	endpoint := ts.URL + PathMCP

	_, err := httpClient(t, endpoint, "", nil)
	require.Error(t, err, "no token, no session")
	_, err = httpClient(t, endpoint, "wrong", nil)
	require.Error(t, err)
	cs, err := httpClient(t, endpoint, "s3cret-token", nil)
	require.NoError(t, err)
	_, err = cs.ListTools(context.Background(), nil)
	require.NoError(t, err)

	status, body, hdr := get(t, "POST", endpoint)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, body, "Authorization: Bearer")
	assert.NotContains(t, body, "s3cret-token")
	assert.Contains(t, hdr.Get("WWW-Authenticate"), "Bearer")

	status, body, _ = get(t, "GET", ts.URL+PathHealthz)
	assert.Equal(t, http.StatusOK, status, "the health check needs no token")
	assert.JSONEq(t, `{"status":"ok"}`, body)

	status, body, _ = get(t, "GET", ts.URL+PathHealthz, "Host", "evil.example:8765")
	assert.Equal(t, http.StatusMisdirectedRequest, status, "DNS rebinding")
	assert.Contains(t, body, "listens on loopback")

	status, body, _ = get(t, "POST", endpoint, "Authorization", "Bearer s3cret-token", "Origin", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, body, "serve.cors_origins")

	status, _, hdr = get(t, "OPTIONS", endpoint, "Origin", "https://app.example.com", "Access-Control-Request-Method", "POST")
	assert.Equal(t, http.StatusNoContent, status, "a listed origin's preflight needs no token")
	assert.Equal(t, "https://app.example.com", hdr.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, hdr.Get("Access-Control-Allow-Headers"), "Mcp-Session-Id")
	assert.Contains(t, hdr.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id")
	assert.Equal(t, "nosniff", hdr.Get("X-Content-Type-Options"))
	assert.True(t, strings.HasPrefix(hdr.Get("Content-Security-Policy"), "default-src 'none'"))
}
