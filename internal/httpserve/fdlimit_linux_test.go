//go:build linux

package httpserve

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFileDescriptorExhaustion is the scenario this package was made for:
// a server limited to 1,024 open files (a helper process,
// TestFDLimitHelper, with RLIMIT_NOFILE 1024) faces 1,100 connections that
// ask for /info without the token and keep the connection, then 1,100
// that send nothing, then 1,100 that trickle their headers, then 300 that
// trickle a body. /healthz answers after each wave, and while the last
// holds; accept never runs out of file descriptors.
func TestFileDescriptorExhaustion(t *testing.T) {
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur < 4000 {
		t.Skipf("this test holds 3,000 connections and needs that many open files; the limit is %d", lim.Cur)
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestFDLimitHelper$", "-test.v")
	helper.Env = append(os.Environ(), "DG_FD_HELPER=1")
	stdout, err := helper.StdoutPipe()
	require.NoError(t, err)
	stderr := &lockedBuffer{}
	helper.Stderr = stderr
	require.NoError(t, helper.Start())
	t.Cleanup(func() {
		_ = helper.Process.Kill()
		_ = helper.Wait()
	})
	sc := bufio.NewScanner(stdout)
	var addr string
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			addr = a
			break
		}
	}
	require.NotEmpty(t, addr, "the helper did not start: %s", stderr.String())
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	healthy := func(when string) {
		t.Helper()
		resp, err := client.Get("http://" + addr + "/healthz")
		if assert.NoError(t, err, "/healthz %s", when) {
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode, "/healthz %s", when)
		}
	}
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	open := func(n int, send string, readStatus bool) map[string]int {
		statuses := map[string]int{}
		for range n {
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				statuses["dial error"]++
				continue
			}
			held = append(held, c)
			if send != "" {
				_, _ = io.WriteString(c, send)
			}
			if readStatus {
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				line, err := bufio.NewReader(c).ReadString('\n')
				if err != nil {
					statuses["no answer"]++
				} else {
					statuses[strings.TrimSpace(line)]++
				}
			}
		}
		return statuses
	}

	healthy("at the start")
	st := open(1100, "GET /info HTTP/1.1\r\nHost: x\r\n\r\n", true)
	t.Logf("1,100 unauthenticated GET /info: %v", st)
	assert.Equal(t, 1100, st["HTTP/1.1 401 Unauthorized"])
	healthy("after 1,100 unauthenticated requests")
	st = open(1100, "", false)
	healthy("with 1,100 connections that send nothing")
	st = open(1100, "GET /info HTTP/1.1\r\nHost: x\r\n", false)
	healthy("with 1,100 connections trickling their headers")
	st = open(300, "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{", false)
	for i := range 5 {
		healthy(fmt.Sprintf("with 300 connections trickling a body (%d)", i))
	}
	_ = helper.Process.Signal(syscall.SIGTERM)
	_ = helper.Wait()
	out := stderr.String()
	assert.NotContains(t, out, "too many open files")
	assert.Contains(t, out, "connection limits reached")
}

// TestFDLimitHelper is the server of TestFileDescriptorExhaustion.
func TestFDLimitHelper(t *testing.T) {
	if os.Getenv("DG_FD_HELPER") == "" {
		t.Skip("runs only as the helper of TestFileDescriptorExhaustion")
	}
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 1024, Max: 1024}))
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("/info", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close") // as server.Guard answers a request without the token
		http.Error(w, "this server needs its token", http.StatusUnauthorized)
	})
	mux.HandleFunc("/body", func(w http.ResponseWriter, r *http.Request) { _, _ = io.ReadAll(r.Body) })
	// Holding 512 sockets costs nothing else here; the rest of the file
	// descriptors stand for the store and the outgoing calls of a server.
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, os.Stderr}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := New(mux, Options{Logger: logger, ReadHeaderTimeout: time.Minute, BodyTimeout: time.Minute})
	require.Equal(t, 512, s.opts.MaxConns, "half the open-file limit")
	fmt.Printf("listening on %s\n", ln.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	go func() {
		<-sig
		_ = s.Close()
	}()
	err = s.Serve(ln)
	assert.ErrorIs(t, err, http.ErrServerClosed)
	st := s.Stats()
	fmt.Fprintf(os.Stderr, "stats: open %d, evicted %d, refused %d\n", st.Open, st.Evicted, st.Refused)
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
