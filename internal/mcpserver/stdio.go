package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioOptions configure Stdio. Zero values take the defaults.
type StdioOptions struct {
	// MaxMessage bounds one inbound message (one line), in bytes (default
	// DefaultMaxMessage). A longer one is answered with an Invalid Request
	// error and dropped.
	MaxMessage int
	// LineTimeout is how long a message begun may wait for the rest of its
	// line (default DefaultLineTimeout). A line cut short — no newline, then
	// silence — is then answered with a Parse error and dropped.
	LineTimeout time.Duration
	// Logger receives a warning per refused message (its size and why, not
	// its content; may be nil).
	Logger *slog.Logger
}

// Defaults of StdioOptions.
const (
	DefaultMaxMessage  = mcp.DefaultMaxLineLength // 16 MiB
	DefaultLineTimeout = 10 * time.Second
)

// Stdio is the transport of research mcp on stdio: MCP's newline-delimited
// JSON-RPC, read from in and written to out, through the SDK's
// mcp.IOTransport — behind a guard that checks each line first. The SDK's
// transport ends the session on the first line it cannot use, taking the
// calls in flight with it; the guard answers such a line itself, as
// JSON-RPC asks, and passes on only what the SDK accepts:
//
//   - a line that is not JSON ("hello world"): -32700 Parse error;
//   - JSON that is not one JSON-RPC 2.0 message (a string, a number, an
//     object without "jsonrpc":"2.0" or with a bad id or method): -32600
//     Invalid Request, with the message's id when it has a usable one;
//   - a batch (a JSON array): -32600 — MCP 2025-06-18 dropped batches, and
//     the SDK ends the session on one once that version is agreed;
//   - a line longer than MaxMessage: -32600 as soon as it passes the limit,
//     then the rest of the line is skipped without being kept in memory;
//   - a line begun and not finished within LineTimeout: -32700, with the id
//     when its beginning holds one; the bytes are dropped and reading goes
//     on (calls in flight are answered meanwhile: only reading waits).
//
// Blank lines are skipped. The guard owns the reading and the line
// framing; the SDK still owns the protocol — this wraps its transport
// rather than replacing it, so batching and the rest of its behaviour
// stay the SDK's. Responses, the SDK's and the guard's, are written whole,
// one at a time.
func Stdio(in io.ReadCloser, out io.Writer, o StdioOptions) mcp.Transport {
	if o.MaxMessage <= 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	if o.LineTimeout <= 0 {
		o.LineTimeout = DefaultLineTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &stdioTransport{in: in, out: &lineWriter{w: out}, opts: o}
}

type stdioTransport struct {
	in   io.ReadCloser
	out  *lineWriter
	opts StdioOptions
}

// Connect starts the guard and connects the SDK's transport behind it.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	pr, pw := io.Pipe()
	g := &frameGuard{in: t.in, out: t.out, pw: pw, opts: t.opts, stop: make(chan struct{})}
	go g.run()
	return (&mcp.IOTransport{Reader: &guardedReader{PipeReader: pr, g: g}, Writer: t.out, MaxLineLength: -1}).Connect(ctx)
}

// lineWriter writes each message whole: the SDK writes a message (with its
// newline) in one Write, and so does the guard, so a lock per Write keeps
// them from interleaving.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close leaves the writer open: stdout belongs to the process.
func (l *lineWriter) Close() error { return nil }

// guardedReader is what the SDK reads: the lines the guard let through.
// Closing it stops the guard and closes the input.
type guardedReader struct {
	*io.PipeReader
	g *frameGuard
}

func (r *guardedReader) Close() error {
	r.g.close()
	return r.PipeReader.Close()
}

// frameGuard reads the input, splits it into lines, answers the ones the
// SDK could not take and passes the others on to pw.
type frameGuard struct {
	in   io.ReadCloser
	out  *lineWriter
	pw   *io.PipeWriter
	opts StdioOptions

	stopOnce sync.Once
	stop     chan struct{}

	line []byte // the line so far
	// over: the line passed MaxMessage and was answered; the rest of it is
	// skipped, and counted in skipped.
	over    bool
	skipped int
}

func (g *frameGuard) close() {
	g.stopOnce.Do(func() {
		close(g.stop)
		_ = g.in.Close()
	})
}

// chunk is one read of the input.
type chunk struct {
	data []byte
	err  error
}

func (g *frameGuard) run() {
	chunks := make(chan chunk)
	go g.read(chunks)
	timer := time.NewTimer(g.opts.LineTimeout)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case c := <-chunks:
			timer.Stop()
			if len(c.data) > 0 && !g.take(c.data) {
				g.close()
				return
			}
			if c.err != nil {
				if g.pending() > 0 {
					g.opts.Logger.Warn("MCP input ended in the middle of a message; dropped it", "bytes", g.pending())
				}
				_ = g.pw.CloseWithError(c.err)
				return
			}
			if g.pending() > 0 {
				timer.Reset(g.opts.LineTimeout)
			}
		case <-timer.C:
			g.expire()
		case <-g.stop:
			_ = g.pw.Close()
			return
		}
	}
}

// read forwards the input's reads until it fails (io.EOF at the end) or
// the guard stops.
func (g *frameGuard) read(chunks chan<- chunk) {
	buf := make([]byte, 64<<10)
	for {
		n, err := g.in.Read(buf)
		c := chunk{data: bytes.Clone(buf[:n]), err: err}
		select {
		case chunks <- c:
		case <-g.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// pending is how many bytes of an unfinished line the guard holds or has
// skipped.
func (g *frameGuard) pending() int { return len(g.line) + g.skipped }

// take splits data into lines. It reports false once the SDK no longer
// reads.
func (g *frameGuard) take(data []byte) bool {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		part := data
		if i >= 0 {
			part = data[:i]
		}
		g.add(part)
		if i < 0 {
			return true
		}
		data = data[i+1:]
		if !g.end() {
			return false
		}
	}
	return true
}

// add appends part to the line, or skips it once the line is too long.
func (g *frameGuard) add(part []byte) {
	if g.over {
		g.skipped += len(part)
		return
	}
	if len(g.line)+len(part) <= g.opts.MaxMessage {
		g.line = append(g.line, part...)
		return
	}
	g.over = true
	head := append(bytes.Clone(g.line[:min(len(g.line), headBytes)]), part[:min(len(part), headBytes-min(len(g.line), headBytes))]...)
	g.skipped = len(g.line) + len(part)
	g.line = nil
	g.refuse(requestID(head), jsonrpc.CodeInvalidRequest,
		fmt.Sprintf("message refused: it is longer than the %d bytes this server accepts; it was dropped", g.opts.MaxMessage),
		"message too long", g.skipped)
}

// headBytes is how much of an overlong line is kept, to find its id.
const headBytes = 4096

// reset forgets the line, keeping a small buffer for the next one.
func (g *frameGuard) reset() {
	if cap(g.line) > 1<<20 {
		g.line = nil
	}
	g.line, g.over, g.skipped = g.line[:0], false, 0
}

// end handles a finished line.
func (g *frameGuard) end() bool {
	line := bytes.Clone(g.line)
	over := g.over
	g.reset()
	if over {
		return true // answered when it passed the limit
	}
	msg := bytes.TrimSpace(line)
	if len(msg) == 0 {
		return true
	}
	if code, why := check(msg); code != 0 {
		id := json.RawMessage(nil)
		if code == jsonrpc.CodeInvalidRequest {
			id = requestID(msg)
		}
		g.refuse(id, code, why, "malformed message", len(line))
		return true
	}
	_, err := g.pw.Write(append(msg, '\n'))
	return err == nil
}

// expire drops a line that was begun and not finished in time.
func (g *frameGuard) expire() {
	if g.pending() == 0 {
		return
	}
	if !g.over {
		g.refuse(requestID(g.line), jsonrpc.CodeParseError,
			fmt.Sprintf("incomplete message: its line did not end within %s; its %d bytes were dropped (end each message with a newline)",
				g.opts.LineTimeout, len(g.line)),
			"incomplete message", len(g.line))
	}
	g.reset()
}

// check says what is wrong with a line for the SDK: 0 when nothing, else
// the JSON-RPC error code and message.
func check(msg []byte) (int, string) {
	if !json.Valid(msg) {
		return jsonrpc.CodeParseError, "parse error: the message is not JSON; send one JSON-RPC 2.0 object per line"
	}
	switch msg[0] {
	case '{':
	case '[':
		return jsonrpc.CodeInvalidRequest, "invalid request: batches (JSON arrays) are not supported; send one JSON-RPC 2.0 object per line"
	default:
		return jsonrpc.CodeInvalidRequest, "invalid request: the message is JSON but not an object; send one JSON-RPC 2.0 object per line"
	}
	if _, err := jsonrpc.DecodeMessage(msg); err != nil {
		return jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 message (" + err.Error() + `); a request needs "jsonrpc":"2.0", a "method" string and, unless it is a notification, an "id" string or number`
	}
	return 0, ""
}

// refuse answers a refused message with a JSON-RPC error.
func (g *frameGuard) refuse(id json.RawMessage, code int, message, what string, size int) {
	g.opts.Logger.Warn("refused an MCP message", "why", what, "bytes", size, "code", code)
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: int64(code), Message: message}})
	if err != nil {
		return
	}
	_, _ = g.out.Write(append(b, '\n'))
}

// requestID finds the top-level "id" of a JSON object that may be cut
// short: the id as it came, when it is a string or a number followed by
// more of the object; nil otherwise.
func requestID(data []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		k, err := dec.Token()
		key, ok := k.(string)
		if err != nil || !ok {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if key != "id" {
			continue
		}
		if dec.InputOffset() >= int64(len(data)) || len(v) == 0 {
			return nil // a number at the very end may have been cut
		}
		if c := v[0]; c == '"' || c == '-' || (c >= '0' && c <= '9') {
			return bytes.Clone(v)
		}
		return nil
	}
	return nil
}
