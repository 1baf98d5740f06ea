package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/tools"
)

// logBuffer collects log records for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func testLogger() (*slog.Logger, *logBuffer) {
	var buf logBuffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

// memServer serves ts over in-memory pipes: each connection of a client
// gets a new pair.
type memServer struct {
	ts       *testServer
	mu       sync.Mutex
	sessions []*sdk.ServerSession
	pipes    []net.Conn // the server's ends
}

func (m *memServer) transport(ctx context.Context) (sdk.Transport, error) {
	client, server := net.Pipe()
	ss, err := m.ts.Connect(ctx, &sdk.IOTransport{Reader: server, Writer: server}, nil)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.sessions = append(m.sessions, ss)
	m.pipes = append(m.pipes, server)
	m.mu.Unlock()
	return &sdk.IOTransport{Reader: client, Writer: client}, nil
}

// crash cuts every connection at the server's end, as a server that dies
// does. (ServerSession.Close would be a clean end, which waits for the
// calls in flight: a sleeping call would hold it until the client's
// timeout.)
func (m *memServer) crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.pipes {
		_ = p.Close()
	}
	m.sessions, m.pipes = nil, nil
}

func connectMem(t *testing.T, srv Server) (*Client, *memServer, *logBuffer) {
	t.Helper()
	m := &memServer{ts: newTestServer(false)}
	logger, logs := testLogger()
	c, err := Connect(context.Background(), srv, Options{Logger: logger, Transport: m.transport})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, m, logs
}

func run(t *testing.T, c *Client, name, args string) tools.Result {
	t.Helper()
	coll, err := c.Collection(context.Background())
	require.NoError(t, err)
	tl, ok := coll.Get(name)
	require.True(t, ok, "no tool %s in %v", name, coll.Names())
	res, err := tl.Run(context.Background(), json.RawMessage(args))
	require.NoError(t, err)
	return res
}

// recv waits for a value from ch; a test that waits longer has failed.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// drain empties ch, so that a later receive waits for a new value.
func drain[T any](ch chan T) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func TestToolsAndSchemas(t *testing.T) {
	c, _, logs := connectMem(t, Server{Name: "t"})
	coll, err := c.Collection(context.Background())
	require.NoError(t, err)
	again, err := c.Collection(context.Background())
	require.NoError(t, err)
	assert.Same(t, coll, again, "the collection is kept until the tools change")

	names := coll.Names()
	for _, n := range names {
		assert.NoError(t, tools.CheckName(n))
		assert.True(t, strings.HasPrefix(n, "t.") || strings.HasPrefix(n, "t_"), n)
	}
	assert.Subset(t, names, []string{"t.echo", "t.sum", "t.image", "t.fail", "t.sleep", "t.bad_schema"})
	assert.Len(t, c.Tools(), len(names))

	echo, _ := coll.Get("t.echo")
	assert.Equal(t, "[t] Echoes text.", echo.Description())
	p := echo.Parameters()
	require.NotNil(t, p)
	assert.Equal(t, "object", p.Type)
	require.Contains(t, p.Properties, "text")
	assert.Equal(t, "string", p.Properties["text"].Type)
	assert.Equal(t, "the text to echo", p.Properties["text"].Description)
	assert.Equal(t, []string{"text"}, p.Required)
	remote, ok := RemoteName(echo)
	assert.True(t, ok)
	assert.Equal(t, "echo", remote)

	// A name models refuse is sanitised; a schema that does not resolve
	// becomes "any object" rather than costing the server its tools.
	bad, ok := coll.Get("t.bad_schema")
	require.True(t, ok)
	remote, _ = RemoteName(bad)
	assert.Equal(t, "bad schema", remote)
	assert.Equal(t, "object", bad.Parameters().Type)
	assert.Empty(t, bad.Parameters().Properties)
	assert.Contains(t, logs.String(), `tool renamed to a name models accept" server=t tool="bad schema" name=t.bad_schema`)
	assert.Contains(t, logs.String(), "input schema is unusable")
	res := run(t, c, "t.bad_schema", `{"x": 1}`)
	assert.Equal(t, "ok", res.Output)

	// A name too long is cut, with a hash that keeps it apart from others.
	var long tools.Tool
	for _, tl := range coll.Tools() {
		if r, _ := RemoteName(tl); strings.HasPrefix(r, "very_long") {
			long = tl
		}
	}
	require.NotNil(t, long)
	assert.Len(t, long.Name(), 64)
	assert.Equal(t, "long", run(t, c, long.Name(), `{}`).Output)
}

// A tool the server annotates read-only has no side effects; the others
// may have (tools.EffectOf).
func TestToolEffects(t *testing.T) {
	c, _, _ := connectMem(t, Server{Name: "t"})
	coll, err := c.Collection(context.Background())
	require.NoError(t, err)
	assert.False(t, coll.Effect(schemas.ToolCall{Name: "t.sum"}).Effectful, "annotated readOnlyHint")
	assert.True(t, coll.Effect(schemas.ToolCall{Name: "t.echo"}).Effectful, "not annotated")
}

func TestResults(t *testing.T) {
	c, _, _ := connectMem(t, Server{Name: "t"})

	assert.Equal(t, tools.Result{Output: "echo: hi"}, run(t, c, "t.echo", `{"text":"hi"}`))

	res := run(t, c, "t.sum", `{"a":2,"b":3}`)
	assert.False(t, res.Failed())
	assert.JSONEq(t, `{"sum":5}`, res.Output, "the SDK's text rendering of the structured result")

	res = run(t, c, "t.structured_only", `{}`)
	assert.JSONEq(t, `{"temperature":21,"unit":"C"}`, res.Output, "structured content without text becomes JSON text")

	res = run(t, c, "t.image", `{}`)
	assert.Equal(t, "a pixel:", res.Output)
	require.Len(t, res.Images, 1)
	assert.Equal(t, schemas.Image{MIMEType: "image/png", Data: tinyPNG}, res.Images[0])

	res = run(t, c, "t.resources", `{}`)
	assert.Equal(t, "Resource link: https://example.com/report (report): the yearly report\n"+
		"Resource file:///notes.txt:\nremember the milk\n"+
		"Resource file:///data.bin (application/octet-stream, 3 bytes: not shown)", res.Output)
	assert.Equal(t, []tools.Source{{URL: "https://example.com/report", Title: "report"}}, res.Sources)

	res = run(t, c, "t.fail", `{}`)
	assert.Equal(t, tools.Result{Error: "disk full"}, res)

	// A tool the server does not know: the server's error, as a failed result.
	tl := &tool{c: c, name: "t.nope", remote: "nope"}
	res, err := tl.Run(context.Background(), nil)
	require.NoError(t, err)
	assert.Contains(t, res.Error, "t.nope failed: the MCP server answered: ")
	assert.Contains(t, res.Error, "nope")
}

// Through a Collection, as an agent calls them: arguments are checked
// against the server's schema before the server sees them.
func TestCollectionExecute(t *testing.T) {
	c, _, _ := connectMem(t, Server{Name: "t"})
	coll, err := c.Collection(context.Background())
	require.NoError(t, err)
	res, err := coll.Execute(context.Background(), schemas.ToolCall{ID: "1", Name: "t.echo", Arguments: json.RawMessage(`{"text":"via collection"}`)})
	require.NoError(t, err)
	assert.Equal(t, "echo: via collection", res.Output)
	res, err = coll.Execute(context.Background(), schemas.ToolCall{ID: "2", Name: "t.echo", Arguments: json.RawMessage(`{"txt":"typo"}`)})
	require.NoError(t, err)
	assert.Contains(t, res.Error, "invalid arguments for t.echo")
}

func TestTimeout(t *testing.T) {
	c, m, logs := connectMem(t, Server{Name: "t", Timeout: 200 * time.Millisecond})
	// t.sleep waits until it is cancelled: only the timeout ends the call.
	res := run(t, c, "t.sleep", `{}`)
	assert.Equal(t, "t.sleep timed out after 200ms", res.Error)
	assert.Equal(t, "sleep", recv(t, m.ts.cancelled, "the server to see the cancellation"), "the server was told")
	assert.Contains(t, logs.String(), "call timed out")
	// The server is still there.
	assert.Equal(t, "echo: still here", run(t, c, "t.echo", `{"text":"still here"}`).Output)
}

func TestCancel(t *testing.T) {
	c, m, _ := connectMem(t, Server{Name: "t"})
	coll, err := c.Collection(context.Background())
	require.NoError(t, err)
	sleep, _ := coll.Get("t.sleep")
	ctx, cancel := context.WithCancel(context.Background())
	type out struct {
		res tools.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := sleep.Run(ctx, json.RawMessage(`{}`))
		done <- out{res, err}
	}()
	recv(t, m.ts.started, "the call to start")
	cancel()
	o := recv(t, done, "the call to return after the cancellation")
	assert.ErrorIs(t, o.err, context.Canceled)
	assert.Equal(t, "t.sleep was cancelled", o.res.Error)
	assert.Equal(t, "sleep", recv(t, m.ts.cancelled, "the server to see the cancellation"))
}

func TestToolListChanges(t *testing.T) {
	c, _, _ := connectMem(t, Server{Name: "t"})
	before, err := c.Collection(context.Background())
	require.NoError(t, err)
	_, ok := before.Get("t.late")
	require.False(t, ok)

	drain(c.changed)
	assert.Equal(t, "added", run(t, c, "t.add_tool", `{}`).Output)
	recv(t, c.changed, "notifications/tools/list_changed")
	after, err := c.Collection(context.Background())
	require.NoError(t, err)
	assert.NotSame(t, before, after)
	assert.Equal(t, "late: new", run(t, c, "t.late", `{"text":"new"}`).Output)

	drain(c.changed)
	assert.Equal(t, "removed", run(t, c, "t.remove_echo", `{}`).Output)
	recv(t, c.changed, "notifications/tools/list_changed")
	after, err = c.Collection(context.Background())
	require.NoError(t, err)
	_, ok = after.Get("t.echo")
	assert.False(t, ok, "a removed tool is gone")
}

// The connection is lost while a call is in flight: the call fails saying
// so, and the next one connects again.
func TestLostConnectionRestarts(t *testing.T) {
	c, m, logs := connectMem(t, Server{Name: "t"})
	coll, err := c.Collection(context.Background())
	require.NoError(t, err)
	sleep, _ := coll.Get("t.sleep")
	done := make(chan tools.Result, 1)
	go func() {
		res, err := sleep.Run(context.Background(), json.RawMessage(`{}`))
		assert.NoError(t, err)
		done <- res
	}()
	recv(t, m.ts.started, "the call to start")
	m.crash()
	res := recv(t, done, "the call to fail")
	assert.True(t, strings.HasPrefix(res.Error, "MCP server t stopped ("), res.Error)
	assert.True(t, strings.HasSuffix(res.Error, "); it will be restarted on the next call"), res.Error)

	assert.Equal(t, "echo: again", run(t, c, "t.echo", `{"text":"again"}`).Output)
	assert.Contains(t, logs.String(), "mcp: connected")
	m.mu.Lock()
	assert.Len(t, m.sessions, 1, "a new connection")
	m.mu.Unlock()

	// Collection reconnects too, once the client has seen the loss.
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	m.crash()
	recv(t, s.done, "the client to see the connection end")
	coll2, err := c.Collection(context.Background())
	require.NoError(t, err)
	assert.NotSame(t, coll, coll2, "listed again")
	assert.Equal(t, "echo: third", run(t, c, "t.echo", `{"text":"third"}`).Output)
}

func TestClosed(t *testing.T) {
	c, _, _ := connectMem(t, Server{Name: "t"})
	coll, err := c.Collection(context.Background())
	require.NoError(t, err)
	echo, _ := coll.Get("t.echo")
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "idempotent")
	res, err := echo.Run(context.Background(), json.RawMessage(`{"text":"x"}`))
	assert.ErrorIs(t, err, ErrClosed)
	assert.True(t, res.Failed())
	_, err = c.Collection(context.Background())
	assert.ErrorIs(t, err, ErrClosed)
}

func toolCall(name, args string) schemas.ToolCall {
	return schemas.ToolCall{ID: "call-1", Name: name, Arguments: json.RawMessage(args)}
}
