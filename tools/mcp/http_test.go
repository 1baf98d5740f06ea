package mcp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// httpServer serves a test server over streamable HTTP on a fixed loopback
// address, and records the Authorization headers it receives.
type httpServer struct {
	t    *testing.T
	addr string
	srv  *httptest.Server

	mu    sync.Mutex
	auths []string
}

func newHTTPServer(t *testing.T) *httpServer {
	h := &httpServer{t: t}
	h.start("127.0.0.1:0")
	t.Cleanup(h.stop)
	return h
}

func (h *httpServer) start(addr string) {
	ln, err := net.Listen("tcp", addr)
	require.NoError(h.t, err)
	ts := newTestServer(false)
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return ts.Server }, nil)
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.auths = append(h.auths, r.Header.Get("Authorization"))
		h.mu.Unlock()
		mcpHandler.ServeHTTP(w, r)
	}))
	h.srv.Listener = ln
	h.srv.Start()
	h.addr = ln.Addr().String()
}

func (h *httpServer) stop() {
	if h.srv != nil {
		h.srv.CloseClientConnections()
		h.srv.Close()
		h.srv = nil
	}
}

func (h *httpServer) restart() {
	h.stop()
	h.start(h.addr)
}

func (h *httpServer) url() string { return "http://" + h.addr + "/mcp" }

func TestHTTPServer(t *testing.T) {
	h := newHTTPServer(t)
	logger, logs := testLogger()
	srv := Server{Name: "t", URL: h.url(), Headers: map[string]string{"Authorization": "Bearer sekrit-token-42"}}
	c, err := Connect(context.Background(), srv, Options{Logger: logger})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })

	assert.Equal(t, "echo: over http", run(t, c, "t.echo", `{"text":"over http"}`).Output)
	h.mu.Lock()
	require.NotEmpty(t, h.auths)
	for _, a := range h.auths {
		assert.Equal(t, "Bearer sekrit-token-42", a, "every request carries the header")
	}
	h.mu.Unlock()

	// The server goes away: the call fails, saying it stopped.
	h.stop()
	res := run(t, c, "t.echo", `{"text":"gone"}`)
	assert.True(t, strings.HasPrefix(res.Error, "MCP server t stopped ("), res.Error)
	assert.True(t, strings.HasSuffix(res.Error, "; it will be restarted on the next call"), res.Error)

	// It comes back (having forgotten every session): the next call works.
	h.restart()
	assert.Equal(t, "echo: back", run(t, c, "t.echo", `{"text":"back"}`).Output)

	// The server restarts between two calls: its session is gone.
	h.restart()
	res = run(t, c, "t.echo", `{"text":"restarted"}`)
	t.Logf("after a restart: %+v", res)
	if res.Failed() { // a server that keeps no session answers at once
		assert.Contains(t, res.Error, "it will be restarted on the next call")
		res = run(t, c, "t.echo", `{"text":"restarted"}`)
	}
	assert.Equal(t, "echo: restarted", res.Output)

	assert.NotContains(t, logs.String(), "sekrit-token-42")
	assert.NotContains(t, res.Error, "sekrit-token-42")
}

func TestHTTPHeadersStayOnTheirHost(t *testing.T) {
	var got []string
	var mu sync.Mutex
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	defer other.Close()
	redirect := httptest.NewServer(http.RedirectHandler(other.URL+"/elsewhere", http.StatusTemporaryRedirect))
	defer redirect.Close()

	hc := newHTTPClient(Server{Name: "t", URL: redirect.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer sekrit-token-42", "X-Api-Key": "k"}}, nil)
	resp, err := hc.Get(redirect.URL + "/mcp")
	require.NoError(t, err)
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{""}, got, "the header did not follow the redirect to another host")
}

func TestHTTPConnectErrors(t *testing.T) {
	// Nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	srv := Server{Name: "t", URL: "http://" + addr + "/mcp?api_key=query-secret-99", Headers: map[string]string{"Authorization": "Bearer sekrit-token-42"}, Timeout: 5 * time.Second}
	_, err = Connect(context.Background(), srv, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mcp: server t: connecting: ")
	assert.NotContains(t, err.Error(), "query-secret-99")
	assert.NotContains(t, err.Error(), "sekrit-token-42")
	t.Log(err)

	// Not an MCP endpoint.
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	_, err = Connect(context.Background(), Server{Name: "t", URL: plain.URL, Timeout: 5 * time.Second}, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mcp: server t: connecting: ")
	t.Log(err)
}
