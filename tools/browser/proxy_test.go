package browser

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/search/netguard"
)

// The proxy is the browser's only way out; these tests drive it with Go's
// HTTP client, no Chromium needed.

func testProxy(t *testing.T) *proxy {
	t.Helper()
	g, err := netguard.New(testGuard())
	require.NoError(t, err)
	p, err := startProxy(g, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(p.close)
	return p
}

func proxyClient(p *proxy) *http.Client {
	u, _ := url.Parse("http://" + p.addr())
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
}

func TestProxyForwardsWhatTheGuardAdmits(t *testing.T) {
	var hits []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits = append(hits, r.Host+r.URL.Path)
		assert.Empty(t, r.Header.Get("X-Forwarded-For"), "the proxy adds nothing")
		assert.Empty(t, r.Header.Get("Proxy-Connection"))
		fmt.Fprint(w, "hello from "+r.URL.Path)
	}))
	defer backend.Close()
	tlsBackend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secure hello") }))
	defer tlsBackend.Close()
	port := func(s *httptest.Server) string { _, p, _ := net.SplitHostPort(s.Listener.Addr().String()); return p }

	p := testProxy(t)
	c := proxyClient(p)
	resp, err := c.Get("http://shop.test:" + port(backend) + "/page")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "hello from /page", string(body))
	resp, err = c.Get("https://docs.test:" + port(tlsBackend) + "/")
	require.NoError(t, err, "a CONNECT tunnel to an admitted host")
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "secure hello", string(body))
	refused, _ := p.takeRefusals()
	assert.Empty(t, refused)

	// Refused: a name resolving to loopback, the loopback address itself,
	// over HTTP and through a tunnel; the backend sees none of them.
	for _, u := range []string{"http://internal.test:" + port(backend) + "/secret", "http://127.0.0.1:" + port(backend) + "/secret"} {
		resp, err := c.Get(u)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, u)
		assert.Contains(t, string(body), "refused: ", u)
		assert.Contains(t, string(body), "is a loopback address", u)
	}
	_, err = c.Get("https://internal.test:" + port(tlsBackend) + "/")
	require.Error(t, err, "a tunnel to a refused host")
	assert.Contains(t, err.Error(), "Forbidden")
	refused, more := p.takeRefusals()
	assert.Zero(t, more)
	require.Len(t, refused, 3)
	assert.Equal(t, "http://internal.test:"+port(backend)+"/secret", refused[0].Target)
	assert.Equal(t, "internal.test (127.0.0.1) is a loopback address (127.0.0.0/8); only public web addresses can be reached", refused[0].Reason)
	assert.Equal(t, "internal.test:"+port(tlsBackend), refused[2].Target)
	assert.Equal(t, []string{"shop.test:" + port(backend) + "/page"}, hits)
	empty, _ := p.takeRefusals()
	assert.Empty(t, empty, "refusals are reported once")

	// Not a proxy request.
	resp, err = http.Get("http://" + p.addr() + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// TestProxyCloseCutsTunnels: closing the proxy cuts the tunnels that are
// open, and waits for their copiers.
func TestProxyCloseCutsTunnels(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(io.Discard, c) // holds the connection open
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	p := testProxy(t)
	conn, err := net.Dial("tcp", p.addr())
	require.NoError(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT shop.test:%s HTTP/1.1\r\nHost: shop.test:%s\r\n\r\n", port, port)
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(status, "HTTP/1.1 200"), status)
	p.close()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = conn.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "the tunnel was cut")
}

func TestSlotsBound(t *testing.T) {
	s := NewSlots(1)
	assert.Equal(t, 1, s.Cap())
	release, err := s.acquire(t.Context())
	require.NoError(t, err)
	ctx, cancel := contextWithCancel(t)
	cancel()
	_, err = s.acquire(ctx)
	require.Error(t, err)
	assert.Equal(t, "all 1 browsers this server may run at once are in use, and none became free in time: try again later", err.Error())
	release()
	release2, err := s.acquire(t.Context())
	require.NoError(t, err, "a slot given back is free again")
	release2()
	var none *Slots
	r, err := none.acquire(ctx)
	require.NoError(t, err, "no Slots: no bound")
	r()
}
