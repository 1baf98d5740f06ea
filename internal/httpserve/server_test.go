package httpserve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serve runs a Server of h on a loopback port and returns its address.
func serve(t *testing.T, h http.Handler, o Options) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := New(h, o)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		_ = s.Close()
		assert.ErrorIs(t, <-done, http.ErrServerClosed)
	})
	return s, ln.Addr().String()
}

// testHandler answers /healthz, blocks /block until release is closed,
// and reads /body's body.
func testHandler(release <-chan struct{}) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("/block", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/body", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusRequestTimeout)
			return
		}
		_, _ = io.WriteString(w, "read\n")
	})
	return mux
}

// dial opens a raw connection to addr from the loopback address from
// ("" for the default).
func dial(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// get sends a GET on c and returns the response's status line.
func get(t *testing.T, c net.Conn, path string) (string, *bufio.Reader) {
	t.Helper()
	_, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	return strings.TrimSpace(line), br
}

// inPhase counts the connections of s in phase p.
func inPhase(s *Server, p phase) int {
	s.lim.mu.Lock()
	defer s.lim.mu.Unlock()
	n := 0
	for c := range s.lim.conns {
		if c.phase == p {
			n++
		}
	}
	return n
}

// closedByServer waits (a bounded while) for the server to close c.
func closedByServer(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
}

// TestIdleConnectionsMakeRoom: a client at its limit of connections that
// send nothing still gets its next request served: the oldest idle one is
// closed to make room.
func TestIdleConnectionsMakeRoom(t *testing.T) {
	s, addr := serve(t, testHandler(nil), Options{MaxConns: 8, MaxConnsPerAddr: 4})
	var idle []net.Conn
	for range 4 {
		idle = append(idle, dial(t, addr, ""))
	}
	require.Eventually(t, func() bool { return s.Stats().Open == 4 }, 30*time.Second, 5*time.Millisecond)
	status, _ := get(t, dial(t, addr, ""), "/healthz")
	assert.Equal(t, "HTTP/1.1 200 OK", status)
	assert.True(t, closedByServer(t, idle[0]), "the oldest idle connection was closed")
	assert.Equal(t, 1, s.Stats().Evicted)
	assert.Equal(t, 0, s.Stats().Refused)
}

// TestRefusedWhenAllServe: when every connection of a client is serving a
// request, its next connection gets a 503 that says why, and is closed.
func TestRefusedWhenAllServe(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s, addr := serve(t, testHandler(release), Options{MaxConns: 8, MaxConnsPerAddr: 3})
	for range 3 {
		status, _ := get(t, dial(t, addr, ""), "/block")
		require.Equal(t, "HTTP/1.1 200 OK", status)
	}
	c := dial(t, addr, "")
	status, br := get(t, c, "/healthz")
	assert.Equal(t, "HTTP/1.1 503 Service Unavailable", status)
	rest, _ := io.ReadAll(br)
	assert.Contains(t, string(rest), "Retry-After: 1")
	assert.Contains(t, string(rest), `{"error":{"code":"unavailable","message":"too many connections from your address (3 open`)
	assert.Equal(t, 1, s.Stats().Refused)
	assert.Equal(t, 3, s.Stats().Open)
}

// TestTotalLimitTakesFromTheBusiestClient: at the total limit, room is
// made at the expense of the client holding the most connections, not of
// the one that holds one.
func TestTotalLimitTakesFromTheBusiestClient(t *testing.T) {
	probe, err := net.Dial("tcp", "127.0.0.2:1")
	if probe != nil {
		probe.Close()
	}
	if err != nil && strings.Contains(err.Error(), "assign requested address") {
		t.Skip("127.0.0.2 is not usable here")
	}
	s, addr := serve(t, testHandler(nil), Options{MaxConns: 6, MaxConnsPerAddr: 6})
	var flood []net.Conn
	for range 5 {
		flood = append(flood, dial(t, addr, "127.0.0.1"))
	}
	other := dial(t, addr, "127.0.0.2")
	require.Eventually(t, func() bool { return s.Stats().Open == 6 }, 30*time.Second, 5*time.Millisecond)
	status, _ := get(t, dial(t, addr, "127.0.0.2"), "/healthz")
	assert.Equal(t, "HTTP/1.1 200 OK", status)
	assert.True(t, closedByServer(t, flood[0]), "the busiest client's oldest connection made room")
	_ = other.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err = other.Read(make([]byte, 1))
	var ne net.Error
	assert.True(t, errors.As(err, &ne) && ne.Timeout(), "the other client's connection is still open: %v", err)
}

// TestSlowHeadersAreCut: a client that trickles its headers is closed
// after ReadHeaderTimeout.
func TestSlowHeadersAreCut(t *testing.T) {
	_, addr := serve(t, testHandler(nil), Options{ReadHeaderTimeout: 100 * time.Millisecond})
	c := dial(t, addr, "")
	_, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
	require.NoError(t, err)
	assert.True(t, closedByServer(t, c))
}

// TestSlowBodyIsCut: a client that trickles its body fails its request
// after BodyTimeout and loses its connection; its connection counted as
// unfinished, open to eviction, all along.
func TestSlowBodyIsCut(t *testing.T) {
	s, addr := serve(t, testHandler(nil), Options{BodyTimeout: 100 * time.Millisecond, MaxConns: 8, MaxConnsPerAddr: 2})
	c := dial(t, addr, "")
	_, err := io.WriteString(c, "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err == nil {
		assert.Equal(t, "HTTP/1.1 408 Request Timeout", strings.TrimSpace(line))
	}
	assert.True(t, closedByServer(t, c))
	assert.Eventually(t, func() bool { return s.Stats().Open == 0 }, 30*time.Second, 5*time.Millisecond)

	// A body still being sent makes way for a request sent whole.
	s2, addr2 := serve(t, testHandler(nil), Options{BodyTimeout: time.Hour, MaxConns: 8, MaxConnsPerAddr: 2})
	slow := dial(t, addr2, "")
	_, err = io.WriteString(slow, "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return inPhase(s2, phaseBody) == 1 }, 30*time.Second, 5*time.Millisecond,
		"the handler reads the body")
	status, _ := get(t, dial(t, addr2, ""), "/healthz") // a kept-alive connection, idle after this
	require.Equal(t, "HTTP/1.1 200 OK", status)
	status, _ = get(t, dial(t, addr2, ""), "/healthz")
	assert.Equal(t, "HTTP/1.1 200 OK", status)
	assert.True(t, closedByServer(t, slow), "the unfinished request, oldest, made room")
	assert.Equal(t, 1, s2.Stats().Evicted)
}

// TestStreamsOutliveTheTimeouts: a response that streams for longer than
// WriteTimeout and BodyTimeout — after a body read whole — is not cut, as
// long as its client reads.
func TestStreamsOutliveTheTimeouts(t *testing.T) {
	const timeout = 50 * time.Millisecond
	var cancelled atomic.Bool
	tick := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case _, ok := <-tick:
				if !ok {
					return
				}
			case <-r.Context().Done():
				cancelled.Store(true)
				return
			}
		}
	})
	_, addr := serve(t, h, Options{WriteTimeout: timeout, BodyTimeout: timeout})
	req, err := http.NewRequest("POST", "http://"+addr+"/", strings.NewReader(`{"a":1}`))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range 5 {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("data: %d\n", i), line)
		_, _ = br.ReadString('\n')
		time.Sleep(3 * timeout) // the time itself is the test: longer than either timeout
		tick <- struct{}{}
	}
	close(tick)
	assert.False(t, cancelled.Load(), "the stream's context was not cancelled")
}

// TestStalledReaderEndsTheStream: a stream whose client stops reading ends
// WriteTimeout after the socket's buffers fill, with its context cancelled.
func TestStalledReaderEndsTheStream(t *testing.T) {
	ended := make(chan error, 1)
	chunk := strings.Repeat("x", 64<<10)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for {
			if _, err := io.WriteString(w, chunk); err != nil {
				ended <- err
				return
			}
			if err := http.NewResponseController(w).Flush(); err != nil {
				ended <- err
				return
			}
		}
	})
	_, addr := serve(t, h, Options{WriteTimeout: 100 * time.Millisecond})
	c := dial(t, addr, "")
	_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	select {
	case err := <-ended:
		assert.Error(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the stream to a client that does not read never ended")
	}
}

// TestShutdownWaitsForRefusals: Shutdown returns once the refused
// connections are closed too.
func TestShutdownWaitsForRefusals(t *testing.T) {
	release := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := New(testHandler(release), Options{MaxConns: 1, MaxConnsPerAddr: 1})
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	status, _ := get(t, dial(t, ln.Addr().String(), ""), "/block")
	require.Equal(t, "HTTP/1.1 200 OK", status)
	status, _ = get(t, dial(t, ln.Addr().String(), ""), "/healthz")
	require.Equal(t, "HTTP/1.1 503 Service Unavailable", status)
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
	assert.ErrorIs(t, <-done, http.ErrServerClosed)
	s.lim.mu.Lock()
	assert.Zero(t, s.lim.lingering)
	s.lim.mu.Unlock()
}

func TestDefaults(t *testing.T) {
	s := New(http.NotFoundHandler(), Options{})
	assert.Equal(t, DefaultMaxConns(), s.opts.MaxConns)
	assert.Equal(t, DefaultMaxConnsPerAddr, s.opts.MaxConnsPerAddr)
	assert.GreaterOrEqual(t, DefaultMaxConns(), 16)
	assert.LessOrEqual(t, DefaultMaxConns(), 4096)
	assert.Equal(t, 2, New(http.NotFoundHandler(), Options{MaxConns: 2}).opts.MaxConnsPerAddr, "no more per client than in all")
}
