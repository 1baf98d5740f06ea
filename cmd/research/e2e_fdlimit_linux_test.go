//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestE2EServersUnderFDLimit: research serve and research mcp --http, with
// a token and 1,024 open files (prlimit), face 1,100 connections that ask
// for a route without the token and keep the connection, then 1,100 that
// send nothing, 1,100 that trickle their headers and 200 that trickle a
// body — all at once by the end. The open health route (/ok, /healthz)
// answers after each wave, and the server never runs out of file
// descriptors.
func TestE2EServersUnderFDLimit(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit not found")
	}
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur < 5000 {
		t.Skipf("this test holds 3,500 connections and needs that many open files; the limit is %d", lim.Cur)
	}
	g := newFakeGemini(t)
	envv := geminiEnv(t, g, map[string]string{"DEEPGRAPH_SERVE_TOKEN": "e2e-token-0123456789"})
	for _, sc := range []struct {
		name    string
		args    []string
		serving *regexp.Regexp
		refused string // a route that needs the token
		body    string // a route that reads a body
		health  string // the open route that says the server is up
	}{
		{"serve", []string{"serve", "--addr", "127.0.0.1:0"}, servingRe, "/info", "/threads", "/ok"},
		{"mcp --http", []string{"mcp", "--http", "127.0.0.1:0"}, mcpServingRe, "/mcp", "/mcp", "/healthz"},
	} {
		t.Run(sc.name, func(t *testing.T) {
			cmd := exec.Command(prlimit, append([]string{"--nofile=1024:1024", binary}, sc.args...)...)
			cmd.Env = envv
			s := &started{cmd: cmd, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, start: time.Now()}
			cmd.Stdout, cmd.Stderr = s.stdout, s.stderr
			require.NoError(t, cmd.Start())
			t.Cleanup(func() {
				if cmd.ProcessState == nil {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}
			})
			s.waitStderr(t, "Serving", 30*time.Second)
			base := sc.serving.FindStringSubmatch(s.stderr.String())[1]
			addr := strings.TrimPrefix(base, "http://")

			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			healthy := func(when string) {
				t.Helper()
				resp, err := client.Get(base + sc.health)
				if assert.NoError(t, err, "%s %s", sc.health, when) {
					resp.Body.Close()
					assert.Equal(t, http.StatusOK, resp.StatusCode, "%s %s", sc.health, when)
				}
			}
			var held []net.Conn
			defer func() {
				for _, c := range held {
					c.Close()
				}
			}()
			open := func(n int, send string, answered bool) map[string]int {
				statuses := map[string]int{}
				for range n {
					c, err := net.DialTimeout("tcp", addr, 10*time.Second)
					if err != nil {
						statuses["dial error"]++
						continue
					}
					held = append(held, c)
					_, _ = io.WriteString(c, send)
					if answered {
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
			st := open(1100, fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", sc.refused, addr), true)
			t.Logf("1,100 requests without the token: %v", st)
			assert.Equal(t, 1100, st["HTTP/1.1 401 Unauthorized"])
			healthy("after 1,100 requests without the token")
			open(1100, "", false)
			healthy("with 1,100 connections that send nothing")
			open(1100, fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\n", sc.refused, addr), false)
			healthy("with 1,100 connections trickling their headers")
			open(200, fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer e2e-token-0123456789\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{", sc.body, addr), false)
			for i := range 3 {
				healthy(fmt.Sprintf("with 200 connections trickling a body (%d)", i))
			}
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			res := s.wait(t, 30*time.Second)
			assert.Equal(t, 0, res.code, res)
			assert.NotContains(t, res.stderr, "too many open files")
			assert.Contains(t, res.stderr, "connection limits reached")
		})
	}
}
