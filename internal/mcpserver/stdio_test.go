package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawClient speaks to a server over Stdio with raw lines, as a broken or
// hostile client would.
type rawClient struct {
	t    *testing.T
	in   *io.PipeWriter
	msgs chan rawMessage
}

// rawMessage is a message the server wrote.
type rawMessage struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Method string `json:"method"`
}

func startStdio(t *testing.T, ctx context.Context, opts Options, so StdioOptions) *rawClient {
	t.Helper()
	srv, err := New(ctx, opts)
	require.NoError(t, err)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.Run(context.Background(), Stdio(inR, outW, so)) }()
	c := &rawClient{t: t, in: inW, msgs: make(chan rawMessage, 100)}
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m rawMessage
			if !assert.NoError(t, json.Unmarshal(sc.Bytes(), &m), "the server wrote a line that is not JSON: %q", sc.Text()) {
				continue
			}
			c.msgs <- m
		}
		close(c.msgs)
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Error("the server did not stop when its input ended")
		}
		_ = outW.Close()
	})
	return c
}

func (c *rawClient) send(line string) {
	c.t.Helper()
	_, err := io.WriteString(c.in, line)
	require.NoError(c.t, err)
}

// next is the next message from the server that is not a notification.
func (c *rawClient) next() rawMessage {
	c.t.Helper()
	for {
		select {
		case m, ok := <-c.msgs:
			require.True(c.t, ok, "the server closed its output")
			if m.Method != "" {
				continue
			}
			return m
		case <-time.After(30 * time.Second):
			c.t.Fatal("no answer from the server")
		}
	}
}

// TestStdioMalformedMessages: every kind of line the SDK's transport
// would end the session on is answered with a JSON-RPC error — with the
// message's id when it has one — and the session goes on: the next request
// is answered, and a call in flight all along is still running.
func TestStdioMalformedMessages(t *testing.T) {
	s := newSearch()
	s.block = "raft leader election"
	c := startStdio(t, context.Background(), fullOptions(s), StdioOptions{MaxMessage: 4096, LineTimeout: 50 * time.Millisecond})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
	require.JSONEq(t, "1", string(c.next().ID))
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deep_research","arguments":{"question":"How does Raft elect a leader?"}}}` + "\n")
	waitSearch(t, s, "raft leader election")

	long := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"web_search","arguments":{"query":"` + strings.Repeat("a", 5000) + `"}}}`
	tests := []struct {
		name, line string
		code       int
		id         string // the error's id, as JSON
		says       string
	}{
		{"not JSON", "hello world\n", -32700, "null", "not JSON"},
		{"two values on a line", `{"jsonrpc":"2.0","id":3,"method":"ping"} {}` + "\n", -32700, "null", "not JSON"},
		{"a JSON array", "[1,2]\n", -32600, "null", "batches"},
		{"a batch", `[{"jsonrpc":"2.0","id":4,"method":"ping"}]` + "\n", -32600, "null", "batches"},
		{"an empty array", "[]\n", -32600, "null", "batches"},
		{"a JSON string", `"hello"` + "\n", -32600, "null", "not an object"},
		{"a number", "42\n", -32600, "null", "not an object"},
		{"null", "null\n", -32600, "null", "not an object"},
		{"no jsonrpc member", `{"id":7,"method":"tools/list"}` + "\n", -32600, "7", "not a JSON-RPC 2.0 message"},
		{"another version", `{"jsonrpc":"1.0","id":"x","method":"ping"}` + "\n", -32600, `"x"`, "not a JSON-RPC 2.0 message"},
		{"an object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}` + "\n", -32600, "null", "not a JSON-RPC 2.0 message"},
		{"a method that is not a string", `{"jsonrpc":"2.0","id":5,"method":5}` + "\n", -32600, "5", "not a JSON-RPC 2.0 message"},
		{"neither request nor response", `{"jsonrpc":"2.0"}` + "\n", -32600, "null", "not a JSON-RPC 2.0 message"},
		{"over the size limit", long + "\n", -32600, "8", "longer than the 4096 bytes"},
		{"over the size limit, in pieces", long[:3000] + "|" + long[3000:] + "\n", -32600, "8", "longer than the 4096 bytes"},
		{"a line that never ends", `{"jsonrpc":"2.0","id":9,"method":"tools/li`, -32700, "9", "did not end within 50ms"},
		{"a line that never ends, without its id", `{"jsonrpc":"2.0","meth`, -32700, "null", "did not end within 50ms"},
	}
	next := 100
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(tt.line, "|") {
				parts := strings.Split(tt.line, "|")
				c.send(parts[0])
				c.send(parts[1])
			} else {
				c.send(tt.line)
			}
			m := c.next()
			require.NotNil(t, m.Error, "an error answers %q", tt.name)
			assert.Equal(t, tt.code, m.Error.Code)
			assert.JSONEq(t, tt.id, string(m.ID))
			assert.Contains(t, m.Error.Message, tt.says)

			next++
			c.send(`{"jsonrpc":"2.0","id":` + itoa(next) + `,"method":"tools/list"}` + "\n")
			m = c.next()
			require.Nil(t, m.Error, "the session goes on")
			assert.JSONEq(t, itoa(next), string(m.ID))
			assert.Contains(t, string(m.Result), "deep_research")
		})
	}

	t.Run("blank lines are skipped", func(t *testing.T) {
		c.send("\n  \r\n\n")
		c.send(`{"jsonrpc":"2.0","id":200,"method":"ping"}` + "  \r\n")
		m := c.next()
		assert.JSONEq(t, "200", string(m.ID))
		assert.Nil(t, m.Error)
	})

	// The research call started before all this is still running: its
	// search has not been cancelled. Cancelling it now ends it.
	select {
	case err := <-s.ended:
		t.Fatalf("the call in flight was cancelled: %v", err)
	default:
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}` + "\n")
	select {
	case err := <-s.ended:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(30 * time.Second):
		t.Fatal("cancelling the call did not reach its search")
	}
}

// TestStdioEndOfInput: input that ends — mid-message, or between
// messages — ends the session cleanly.
func TestStdioEndOfInput(t *testing.T) {
	for _, tail := range []string{"", `{"jsonrpc":"2.0","id":3,"meth`} {
		srv, err := New(context.Background(), fullOptions(newSearch()))
		require.NoError(t, err)
		in := io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` +
			"\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n" + tail))
		var out lockedLines
		done := make(chan error, 1)
		go func() { done <- srv.Run(context.Background(), Stdio(in, &out, StdioOptions{})) }()
		select {
		case err := <-done:
			assert.True(t, err == nil || strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "closed"), "%v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("the session did not end with its input")
		}
	}
}

// lockedLines collects output.
type lockedLines struct{ strings.Builder }

func itoa(n int) string { return strconv.Itoa(n) }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestRequestID(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":9,"method":"x"}`, "9"},
		{`{"id":"abc","method`, `"abc"`},
		{`{"params":{"id":1},"id":-3,`, "-3"},
		{`{"jsonrpc":"2.0","id":12`, ""}, // the number may go on
		{`{"id":null,"method":"x"}`, ""},
		{`{"id":{"a":1},"method":"x"}`, ""},
		{`{"id":true}`, ""},
		{`[{"id":1}]`, ""},
		{`hello`, ""},
		{`{"method":"x"}`, ""},
		{`{"params":"aaaa`, ""},
	}
	for _, tt := range tests {
		got := requestID([]byte(tt.in))
		assert.Equal(t, tt.want, string(got), tt.in)
	}
}

func FuzzStdioGuard(f *testing.F) {
	for _, s := range []string{"hello world\n", "[1]\n", `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n", `{"id":`, "\n\n", `"x"` + "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		pr, pw := io.Pipe()
		var out lockedLines
		g := &frameGuard{in: io.NopCloser(strings.NewReader(input)), out: &lineWriter{w: &out}, pw: pw,
			opts: StdioOptions{MaxMessage: 64, LineTimeout: time.Hour, Logger: discardLogger()}, stop: make(chan struct{})}
		go g.run()
		passed, err := io.ReadAll(pr)
		require.NoError(t, err)
		// Whatever passes is one valid JSON-RPC object per line, which the
		// SDK takes; whatever is answered is one JSON object per line.
		for _, line := range strings.Split(strings.TrimSuffix(string(passed), "\n"), "\n") {
			if line == "" && len(passed) == 0 {
				continue
			}
			code, why := check([]byte(line))
			assert.Zero(t, code, "%q passed: %s", line, why)
		}
		for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if line == "" {
				continue
			}
			assert.True(t, json.Valid([]byte(line)), "answer %q", line)
		}
	})
}
