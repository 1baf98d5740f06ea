//go:build unix

package mcp

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func connectStdio(t *testing.T, srv Server) (*Client, *logBuffer) {
	t.Helper()
	logger, logs := testLogger()
	c, err := Connect(context.Background(), srv, Options{Logger: logger})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, logs
}

func pidOf(t *testing.T, c *Client) int {
	t.Helper()
	pid, err := strconv.Atoi(run(t, c, "t.pid", `{}`).Output)
	require.NoError(t, err)
	return pid
}

// gone reports whether no process pid exists (not even a zombie).
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func TestStdioServer(t *testing.T) {
	t.Setenv("DEEPGRAPH_TEST_SECRET_KEY", "sk-parent-secret")
	srv := stdioServer("t")
	srv.Env["MY_TOKEN"] = "tok-123456"
	c, logs := connectStdio(t, srv)

	assert.Equal(t, "echo: over stdio", run(t, c, "t.echo", `{"text":"over stdio"}`).Output)
	assert.Equal(t, "true tok-123456", run(t, c, "t.env", `{"name":"MY_TOKEN"}`).Output, "configured env reaches the server")
	assert.Equal(t, "false ", run(t, c, "t.env", `{"name":"DEEPGRAPH_TEST_SECRET_KEY"}`).Output, "this process's secrets do not")
	assert.Equal(t, "true", strings.Fields(run(t, c, "t.env", `{"name":"PATH"}`).Output)[0])
	assert.NotContains(t, logs.String(), "tok-123456")

	// A server that crashes: the call fails, saying so; the next restarts it.
	first := pidOf(t, c)
	res := run(t, c, "t.crash", `{}`)
	assert.Equal(t, "MCP server t stopped (exit status 3); it will be restarted on the next call", res.Error)
	assert.Contains(t, logs.String(), "crashing on purpose", "its last stderr lines are logged")
	second := pidOf(t, c)
	assert.NotEqual(t, first, second)
	assert.True(t, gone(first), "the crashed server was reaped")
	assert.Equal(t, "echo: back", run(t, c, "t.echo", `{"text":"back"}`).Output)

	// Close stops the server and what it started, and reaps it.
	child, err := strconv.Atoi(run(t, c, "t.spawn", `{}`).Output)
	require.NoError(t, err)
	require.False(t, gone(child))
	require.NoError(t, c.Close())
	assert.True(t, gone(second), "no zombie")
	// The grandchild was killed with the group; init reaps it.
	assert.Eventually(t, func() bool { return gone(child) }, 30*time.Second, 10*time.Millisecond, "the server's child outlived it")
}

func TestStdioTimeout(t *testing.T) {
	srv := stdioServer("t")
	// The timeout bounds the server's start too: a race-built server on a
	// busy machine took longer than 300 ms to list its tools.
	srv.Timeout = 2 * time.Second
	c, _ := connectStdio(t, srv)
	pid := pidOf(t, c)
	// t.sleep waits until it is cancelled: only the timeout ends the call.
	res := run(t, c, "t.sleep", `{}`)
	assert.Equal(t, "t.sleep timed out after 2s", res.Error)
	assert.Equal(t, pid, pidOf(t, c), "the server keeps running after a timeout")
}

func TestStdioToolListChanges(t *testing.T) {
	c, _ := connectStdio(t, stdioServer("t"))
	drain(c.changed)
	assert.Equal(t, "added", run(t, c, "t.add_tool", `{}`).Output)
	recv(t, c.changed, "notifications/tools/list_changed")
	assert.Equal(t, "late: over stdio", run(t, c, "t.late", `{"text":"over stdio"}`).Output)
}

func TestStdioStartErrors(t *testing.T) {
	_, err := Connect(context.Background(), Server{Name: "x", Command: "deepgraph-no-such-command", Env: map[string]string{"K": "secret-value-1"}}, Options{})
	require.Error(t, err)
	assert.Equal(t, `mcp: server x: command "deepgraph-no-such-command" not found in PATH: install it or give its full path`, err.Error())

	// A program that is no MCP server: it exits, and the error says how.
	_, err = Connect(context.Background(), Server{Name: "x", Command: "sh", Args: []string{"-c", "echo not mcp; exit 7"}, Env: map[string]string{"K": "secret-value-1"}}, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mcp: server x: connecting: ")
	assert.Contains(t, err.Error(), "exit status 7")
	assert.NotContains(t, err.Error(), "secret-value-1")

	// A server that never answers (for ten minutes): the timeout bounds the
	// start.
	_, err = Connect(context.Background(), Server{Name: "x", Command: "sleep", Args: []string{"600"}, Timeout: 300 * time.Millisecond}, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no answer within 300ms")
}

// No goroutine of a client outlives its Close, through a crash and a
// restart.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	c, err := Connect(context.Background(), stdioServer("t"), Options{})
	require.NoError(t, err)
	assert.Equal(t, "echo: x", run(t, c, "t.echo", `{"text":"x"}`).Output)
	assert.True(t, run(t, c, "t.crash", `{}`).Failed())
	assert.Equal(t, "echo: y", run(t, c, "t.echo", `{"text":"y"}`).Output)
	require.NoError(t, c.Close())
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines left, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
