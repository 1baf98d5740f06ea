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

// With a token, every API route but the open ones needs it.
func TestAuth(t *testing.T) {
	ts := newTestServer(t, world{}, withToken("s3cret-token"))
	for _, rt := range routes() {
		ts.token = ""
		status, data, hdr := ts.do(rt.Method, strings.NewReplacer("{thread_id}", "t1", "{run_id}", "r1").Replace(rt.Path), bodyFor(rt))
		if rt.Auth {
			assert.Equal(t, http.StatusUnauthorized, status, "%s %s without the token", rt.Method, rt.Path)
			assert.Contains(t, string(data), `"code":"unauthorized"`)
			assert.Contains(t, hdr.Get("WWW-Authenticate"), "Bearer")
			assert.NotContains(t, string(data), "s3cret-token")
		} else {
			assert.Equal(t, http.StatusOK, status, "%s %s is open", rt.Method, rt.Path)
		}
	}
	status, _, _ := ts.do("GET", "/info", nil, "Authorization", "Bearer wrong")
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _, _ = ts.do("GET", "/info", nil, "Authorization", "s3cret-token")
	assert.Equal(t, http.StatusUnauthorized, status, "the scheme is Bearer")
	ts.token = "s3cret-token"
	info := call[Info](ts, "GET", "/info", nil, 200)
	assert.True(t, info.Auth)
	// The page itself is open: it asks for the token.
	ts.token = ""
	status, _, _ = ts.do("GET", "/", nil)
	assert.Equal(t, http.StatusOK, status)
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
// never a wildcard.
func TestCORSAndOrigins(t *testing.T) {
	ts := newTestServer(t, world{}, withCORS("https://app.example.com"))
	status, data, hdr := ts.do("POST", "/threads", map[string]any{}, "Origin", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, string(data), "serve.cors_origins")
	assert.Empty(t, hdr.Get("Access-Control-Allow-Origin"))

	status, _, hdr = ts.do("GET", "/threads", nil, "Origin", "https://app.example.com")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "https://app.example.com", hdr.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, hdr.Values("Vary"), "Origin")

	status, _, hdr = ts.do("OPTIONS", "/threads", nil, "Origin", "https://app.example.com", "Access-Control-Request-Method", "POST")
	assert.Equal(t, http.StatusNoContent, status)
	assert.Contains(t, hdr.Get("Access-Control-Allow-Headers"), "Authorization")
	assert.Contains(t, hdr.Get("Access-Control-Allow-Headers"), "Last-Event-ID")

	// The page's own origin is always allowed.
	host := strings.TrimPrefix(ts.http.URL, "http://")
	status, _, hdr = ts.do("POST", "/threads", map[string]any{}, "Origin", "http://"+host)
	assert.Equal(t, http.StatusCreated, status)
	assert.Empty(t, hdr.Get("Access-Control-Allow-Origin"))
}

// A loopback server answers only requests naming a loopback host: a page
// of evil.example whose name was rebound to 127.0.0.1 gets nothing.
func TestDNSRebinding(t *testing.T) {
	ts := newTestServer(t, world{})
	for _, path := range []string{"/threads", AgentAPIPrefix + "/threads", AgentAPIPrefix + "/info", "/"} {
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
	for _, path := range []string{"/", "/assets/app.js", "/threads"} {
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

// Bodies and questions are bounded; bad requests say what is wrong.
func TestLimitsAndBadRequests(t *testing.T) {
	ts := newTestServer(t, world{}, func(o *Options, _ *testEngine) { o.MaxQuestion = 100; o.MaxBody = 4096 })
	th := call[Thread](ts, "POST", "/threads", map[string]any{}, 201)
	runs := "/threads/" + th.ID + "/runs"
	for _, c := range []struct {
		name   string
		body   any
		status int
		want   string
	}{
		{"a body over the limit", map[string]any{"input": strings.Repeat("x", 5000)}, 413, "over 4096 bytes"},
		{"a question over the limit", map[string]any{"input": strings.Repeat("é", 101)}, 413, "101 characters; this server takes at most 100"},
		{"an empty question", map[string]any{"input": "  "}, 400, "input is empty"},
		{"an unknown field", map[string]any{"input": "q", "questoin": "x"}, 400, `unknown field "questoin"`},
		{"an unknown kind", map[string]any{"input": "q", "kind": "poem"}, 400, `kind "poem": use research or agent`},
		{"an unknown effort", map[string]any{"input": "q", "effort": "extreme"}, 400, "effort"},
		{"a model not offered", map[string]any{"input": "q", "models": map[string]string{"answer": "openai:gpt-5"}}, 400, "not offered"},
		{"a back end not configured", map[string]any{"input": "q", "backend": "corpus"}, 400, "not configured"},
	} {
		status, data, _ := ts.do("POST", runs, c.body)
		assert.Equal(t, c.status, status, c.name)
		var e errorBody
		require.NoError(t, json.Unmarshal(data, &e), c.name)
		assert.Contains(t, e.Error.Message, c.want, c.name)
	}
	req, err := http.NewRequest("POST", ts.http.URL+runs, strings.NewReader("input=q"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := ts.http.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, "a form post (no preflight) is refused")

	for _, q := range []string{"limit=0", "limit=101", "limit=x", "offset=-1"} {
		status, data, _ := ts.do("GET", "/threads?"+q, nil)
		assert.Equal(t, 400, status, q)
		assert.Contains(t, string(data), `"code":"bad_request"`)
	}
	status, data, _ := ts.do("GET", "/threads/"+th.ID+"/runs/nope/stream", nil, "Last-Event-ID", "abc")
	assert.Equal(t, 400, status)
	assert.Contains(t, string(data), "Last-Event-ID")
}

// A client refused for its token, its origin or its host loses its
// connection with the answer (Connection: close), instead of keeping it
// open for nothing.
func TestRefusalsCloseTheConnection(t *testing.T) {
	ts := newTestServer(t, world{}, withToken("s3cret-token"))
	addr := strings.TrimPrefix(ts.http.URL, "http://")
	var refused []string
	for _, path := range []string{"/info", AgentAPIPrefix + "/info", AgentAPIPrefix + "/threads/search"} {
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
