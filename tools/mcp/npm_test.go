//go:build unix

package mcp

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/npmtest"
)

// The tests against MCP servers published on npm, installed with the
// machine's npm (they skip, saying so, without it).

func everything(t *testing.T) (node, bin string) {
	bin = npmtest.Bin(t, npmtest.ServerEverything, npmtest.ServerEverythingVersion, "mcp-server-everything")
	return npmtest.Node(t), bin
}

func TestNPMServerEverythingStdio(t *testing.T) {
	node, bin := everything(t)
	t.Setenv("DEEPGRAPH_TEST_SECRET_KEY", "sk-parent-secret")
	srv := Server{Name: "everything", Command: node, Args: []string{bin, "stdio"}, Env: map[string]string{"MY_SETTING": "configured-value"}}
	c, logs := connectStdio(t, srv)
	coll, err := c.Collection(context.Background())
	require.NoError(t, err)
	assert.Subset(t, coll.Names(), []string{"everything.echo", "everything.get-tiny-image", "everything.get-structured-content", "everything.get-env"})

	echo, _ := coll.Get("everything.echo")
	require.NotNil(t, echo.Parameters())
	assert.Equal(t, "string", echo.Parameters().Properties["message"].Type, "the server's schema is passed on")
	assert.Equal(t, "Echo: hello from Go", run(t, c, "everything.echo", `{"message":"hello from Go"}`).Output)

	res := run(t, c, "everything.get-tiny-image", `{}`)
	assert.False(t, res.Failed())
	require.Len(t, res.Images, 1)
	assert.Equal(t, "image/png", res.Images[0].MIMEType)
	assert.Equal(t, "\x89PNG", string(res.Images[0].Data[:4]), "decoded image bytes")
	assert.Equal(t, "Here's the image you requested:\nThe image above is the MCP logo.", res.Output)

	res = run(t, c, "everything.get-structured-content", `{"location":"Chicago"}`)
	assert.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, `"temperature"`)

	// The schema is checked before the call reaches the server.
	call, err := coll.Execute(context.Background(), toolCall("everything.get-structured-content", `{"location":"Paris"}`))
	require.NoError(t, err)
	assert.Contains(t, call.Error, "invalid arguments")

	env := run(t, c, "everything.get-env", `{}`).Output
	assert.Contains(t, env, `"MY_SETTING": "configured-value"`)
	assert.NotContains(t, env, "sk-parent-secret", "this process's secrets do not reach the server")
	assert.NotContains(t, logs.String(), "configured-value")

	res = run(t, c, "everything.get-resource-links", `{"count":2}`)
	assert.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, "Resource link: ")
}

func TestNPMServerEverythingHTTP(t *testing.T) {
	node, bin := everything(t)
	port := freePort(t)
	startEverythingHTTP(t, node, bin, port)

	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	logger, logs := testLogger()
	c, err := Connect(context.Background(), Server{Name: "everything", URL: url, Headers: map[string]string{"X-Api-Key": "hdr-secret-77"}}, Options{Logger: logger})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	assert.Equal(t, "Echo: over http", run(t, c, "everything.echo", `{"message":"over http"}`).Output)

	// The server restarts and forgets the session: at most one call fails,
	// saying the server stopped, and the client connects again.
	startEverythingHTTP(t, node, bin, port)
	res := run(t, c, "everything.echo", `{"message":"after restart"}`)
	if res.Failed() {
		assert.Contains(t, res.Error, "MCP server everything stopped (")
		res = run(t, c, "everything.echo", `{"message":"after restart"}`)
	}
	assert.Equal(t, "Echo: after restart", res.Output)
	assert.NotContains(t, logs.String(), "hdr-secret-77")
}

func TestNPMServerFilesystem(t *testing.T) {
	bin := npmtest.Bin(t, npmtest.ServerFilesystem, npmtest.ServerFilesystemVersion, "mcp-server-filesystem")
	node := npmtest.Node(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "notes.md"), []byte("# Notes\nbuy milk\n"), 0o644))

	c, _ := connectStdio(t, Server{Name: "files", Command: node, Args: []string{bin, root}})
	coll, err := c.Collection(context.Background())
	require.NoError(t, err)
	assert.Subset(t, coll.Names(), []string{"files.read_text_file", "files.write_file", "files.list_directory", "files.list_allowed_directories"})

	assert.Equal(t, "# Notes\nbuy milk\n", run(t, c, "files.read_text_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "notes.md"))).Output)

	target := filepath.Join(root, "out.txt")
	res := run(t, c, "files.write_file", fmt.Sprintf(`{"path":%q,"content":"written through MCP"}`, target))
	require.False(t, res.Failed(), res.Error)
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "written through MCP", string(b))

	listing := run(t, c, "files.list_directory", fmt.Sprintf(`{"path":%q}`, root)).Output
	assert.Contains(t, listing, "[FILE] notes.md")
	assert.Contains(t, listing, "[FILE] out.txt")

	// Outside its root the server refuses: a failed result, not an error.
	res = run(t, c, "files.read_text_file", `{"path":"/etc/hostname"}`)
	assert.True(t, res.Failed())
	assert.Contains(t, res.Error, "denied")
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startEverythingHTTP runs server-everything's streamable-HTTP server on
// port until the test ends, or until it is started again.
func startEverythingHTTP(t *testing.T, node, bin string, port int) {
	t.Helper()
	if prev, ok := everythingHTTP[t.Name()]; ok {
		prev()
	}
	cmd := exec.Command(node, bin, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	listening := make(chan struct{})
	var lines []string
	scanDone := make(chan struct{})
	go func() {
		defer close(scanDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.Contains(sc.Text(), "listening on port") {
				close(listening)
			}
		}
	}()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-scanDone
		_ = cmd.Wait()
	}
	everythingHTTP[t.Name()] = stop
	t.Cleanup(func() {
		if s, ok := everythingHTTP[t.Name()]; ok {
			delete(everythingHTTP, t.Name())
			s()
		}
	})
	select {
	case <-listening:
	case <-scanDone:
		t.Fatalf("server-everything did not start:\n%s", strings.Join(lines, "\n"))
	}
}

// everythingHTTP holds the stop function of each test's running server.
var everythingHTTP = map[string]func(){}
