package server

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/guard"
)

func withToken(tok string) serverOption { return func(o *Options, _ *testEngine) { o.Token = tok } }

func withCORS(origins ...string) serverOption {
	return func(o *Options, _ *testEngine) { o.CORSOrigins = origins }
}

// With a token, every API route but GET /ok needs it (the Agent Server
// API's own test walks every route, agentserver.TestEveryRouteIsGuarded),
// as x-api-key or Authorization: Bearer, never echoed; the page is open:
// it asks for the token.
func TestAuth(t *testing.T) {
	ts := newTestServer(t, world{}, withToken("s3cret-token"))
	ts.token = ""
	for _, rt := range []struct{ method, path string }{{"GET", "/info"}, {"POST", "/threads/search"}, {"POST", "/threads"},
		{"POST", "/assistants/search"}, {"POST", "/runs/wait"}, {"GET", "/threads/00000000-0000-4000-8000-000000000001/runs"}} {
		status, data, _ := ts.do(rt.method, rt.path, map[string]any{})
		assert.Equal(t, http.StatusUnauthorized, status, "%s %s without the token", rt.method, rt.path)
		assert.NotContains(t, string(data), "s3cret-token")
	}
	status, _, _ := ts.do("GET", "/ok", nil)
	assert.Equal(t, http.StatusOK, status, "GET /ok is open")
	status, _, _ = ts.do("GET", "/info", nil, "Authorization", "Bearer wrong")
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _, _ = ts.do("GET", "/info", nil, "Authorization", "s3cret-token")
	assert.Equal(t, http.StatusUnauthorized, status, "the scheme is Bearer")
	status, _, _ = ts.do("GET", "/info", nil, "Authorization", "Bearer s3cret-token")
	assert.Equal(t, http.StatusOK, status)
	ts.token = "s3cret-token"
	lgCall[json.RawMessage](ts, "POST", "/assistants/search", map[string]any{}, 200)
	ts.token = ""
	for _, path := range []string{"/", "/assets/app.js"} {
		status, _, _ = ts.do("GET", path, nil)
		assert.Equal(t, http.StatusOK, status, path)
	}
}

// The server refuses to listen beyond loopback without a token.
func TestCheck(t *testing.T) {
	require.NoError(t, Check("127.0.0.1:8080", ""))
	require.NoError(t, Check("localhost:8080", ""))
	require.NoError(t, Check("[::1]:8080", ""))
	require.NoError(t, Check("0.0.0.0:8080", "tok"))
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "192.168.1.5:80", "[::]:8080"} {
		err := Check(addr, "")
		require.ErrorIs(t, err, ErrNeedsToken, addr)
		assert.Contains(t, err.Error(), "serve.token")
		assert.Contains(t, err.Error(), "DEEPGRAPH_SERVE_TOKEN")
	}
}

// Pages of other sites may not call the API — not even a simple POST that
// needs no preflight — unless listed; a listed origin gets CORS headers,
// never a wildcard, that expose the run's location.
func TestCORSAndOrigins(t *testing.T) {
	ts := newTestServer(t, world{}, withCORS("https://app.example.com"))
	status, data, hdr := ts.do("POST", "/threads", map[string]any{}, "Origin", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, string(data), "serve.cors_origins")
	assert.Empty(t, hdr.Get("Access-Control-Allow-Origin"))

	status, _, hdr = ts.do("POST", "/threads/search", map[string]any{}, "Origin", "https://app.example.com")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "https://app.example.com", hdr.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, hdr.Values("Vary"), "Origin")

	status, _, hdr = ts.do("OPTIONS", "/threads/x/runs/stream", nil, "Origin", "https://app.example.com", "Access-Control-Request-Method", "POST")
	assert.Equal(t, http.StatusNoContent, status)
	for _, h := range []string{"Authorization", "Last-Event-ID", "X-Api-Key"} {
		assert.Contains(t, hdr.Get("Access-Control-Allow-Headers"), h)
	}
	assert.Contains(t, hdr.Get("Access-Control-Expose-Headers"), "Content-Location")
	assert.Contains(t, hdr.Get("Access-Control-Expose-Headers"), "Location")

	// The page's own origin is always allowed.
	host := strings.TrimPrefix(ts.http.URL, "http://")
	status, _, hdr = ts.do("POST", "/threads", map[string]any{}, "Origin", "http://"+host)
	assert.Equal(t, http.StatusOK, status)
	assert.Empty(t, hdr.Get("Access-Control-Allow-Origin"))
}

// A loopback server answers only requests naming a loopback host: a page
// of evil.example whose name was rebound to 127.0.0.1 gets nothing.
func TestDNSRebinding(t *testing.T) {
	ts := newTestServer(t, world{})
	for _, path := range []string{"/threads/search", "/info", "/"} {
		req, err := http.NewRequest("GET", ts.http.URL+path, nil)
		require.NoError(t, err)
		req.Host = "evil.example:8080"
		resp, err := ts.http.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode, path)
	}
	for _, h := range []string{"localhost:8080", "127.0.0.1", "[::1]:9", "app.localhost:1"} {
		assert.True(t, guard.LoopbackHost(h), h)
	}
	assert.False(t, guard.LoopbackHost("127.0.0.1.evil.example"))
}

// The page's headers: a strict CSP and no sniffing or framing.
func TestPageHeaders(t *testing.T) {
	ts := newTestServer(t, world{})
	for _, path := range []string{"/", "/assets/app.js", "/info"} {
		status, _, hdr := ts.do("GET", path, nil)
		require.Equal(t, http.StatusOK, status, path)
		csp := hdr.Get("Content-Security-Policy")
		assert.Contains(t, csp, "default-src 'none'")
		assert.Contains(t, csp, "script-src 'self'")
		assert.NotContains(t, csp, "unsafe-inline")
		assert.NotContains(t, csp, "unsafe-eval")
		assert.Contains(t, csp, "frame-ancestors 'none'")
		assert.Equal(t, "nosniff", hdr.Get("X-Content-Type-Options"))
	}
	_, body, hdr := ts.do("GET", "/", nil)
	assert.Contains(t, hdr.Get("Content-Type"), "text/html")
	assert.NotContains(t, string(body), "http://", "no resource from elsewhere (no CDN)")
	assert.NotContains(t, string(body), "https://")
}

// A client refused for its token, its origin or its host loses its
// connection with the answer (Connection: close), instead of keeping it
// open for nothing.
func TestRefusalsCloseTheConnection(t *testing.T) {
	ts := newTestServer(t, world{}, withToken("s3cret-token"))
	addr := strings.TrimPrefix(ts.http.URL, "http://")
	var refused []string
	for _, path := range []string{"/info", "/threads/search"} {
		refused = append(refused,
			"GET "+path+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\n",
			"GET "+path+" HTTP/1.1\r\nHost: "+addr+"\r\nX-Api-Key: wrong\r\n\r\n",
			"GET "+path+" HTTP/1.1\r\nHost: "+addr+"\r\nOrigin: https://evil.example\r\nAuthorization: Bearer s3cret-token\r\n\r\n",
			"GET "+path+" HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer s3cret-token\r\n\r\n")
	}
	for _, req := range refused {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, err = io.WriteString(c, req)
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		_, _ = io.ReadAll(resp.Body)
		assert.Contains(t, []int{401, 403, 421}, resp.StatusCode)
		assert.True(t, resp.Close, "Connection: close (%d)", resp.StatusCode)
		n, err := c.Read(make([]byte, 1))
		assert.Zero(t, n)
		assert.ErrorIs(t, err, io.EOF, "the server closed the connection after %d", resp.StatusCode)
		c.Close()
	}
	// With the token the connection is kept for the next request.
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	for range 2 {
		_, err = io.WriteString(c, "GET /info HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: Bearer s3cret-token\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, _ = io.ReadAll(resp.Body)
		assert.Equal(t, 200, resp.StatusCode)
		assert.False(t, resp.Close)
	}
}
