package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepgraph/deepgraph/internal/redact"
	"github.com/deepgraph/deepgraph/tools"
)

// ErrClosed is returned by a Client that has been closed.
var ErrClosed = errors.New("mcp: client closed")

// Options configure a Client.
type Options struct {
	// Logger receives the client's records: connections, servers that
	// stopped (with their last stderr lines), renamed tools, unusable
	// schemas, and a stdio server's stderr at debug level. Nil discards
	// them. Env values and headers never appear in them.
	Logger *slog.Logger
	// ClientName and ClientVersion are how the client introduces itself to
	// servers; "deepgraph" and "devel" by default.
	ClientName    string
	ClientVersion string
	// HTTPClient is the base client for URL servers (its Transport, for a
	// proxy or custom TLS); nil means http.DefaultTransport. Calls are
	// bounded by the server's Timeout, not by HTTPClient.Timeout, which
	// should stay 0: the server's event stream is long-lived.
	HTTPClient *http.Client
	// Transport, when set, makes the connection instead of Command or URL:
	// it is called for each connection (the first and each restart), so it
	// must return a new transport each time — for instance one end of
	// sdk.NewInMemoryTransports whose other end a server was connected to.
	Transport func(ctx context.Context) (sdk.Transport, error)
}

// Client is a connection to one MCP server whose tools it offers as
// tools.Tools named "server.tool". It implements tools.Dynamic, and is safe
// for concurrent use.
//
// A call is bounded by the server's Timeout and by its context; when either
// ends, the SDK tells the server the call is cancelled. A timeout is a
// failed tools.Result ("files.read timed out after 1m0s"); a cancelled
// context is an error.
//
// When the connection is lost — a stdio server exited, an HTTP server went
// away or forgot the session — the call in flight returns a failed Result
// saying the server stopped and will be restarted, and the next call, or
// Collection, connects again (starting a stdio server anew) and lists its
// tools again. Collection does not retry a failed restart more often than
// every second, doubling to every 30 seconds; a call always tries.
type Client struct {
	srv     Server
	opts    Options
	log     *slog.Logger
	client  *sdk.Client
	secrets []string

	// life ends with Close, aborting a connection being made.
	life     context.Context
	stopLife context.CancelFunc
	// sem is held while connecting or listing, one at a time.
	sem chan struct{}
	// listChanged is set by the server's notifications/tools/list_changed;
	// changed is signalled too (for tests).
	listChanged atomic.Bool
	changed     chan struct{}
	wg          sync.WaitGroup // the sessions' watchers

	mu       sync.Mutex
	sess     *session
	coll     *tools.Collection
	closed   bool
	failures int       // failed reconnections in a row
	retryAt  time.Time // Collection does not reconnect before
	lastErr  error
}

// session is one connection to the server.
type session struct {
	cs      *sdk.ClientSession
	proc    *process      // a stdio server's process, or nil
	done    chan struct{} // closed when the connection has ended
	closing atomic.Bool   // we are closing it (not a crash)
	reason  string        // why it ended, once done (guarded by Client.mu)
}

func (s *session) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Connect starts (or connects to) the server, and lists its tools. The
// returned Client must be closed.
func Connect(ctx context.Context, srv Server, opts Options) (*Client, error) {
	if opts.Transport != nil {
		if !validServerName().MatchString(srv.Name) {
			return nil, fmt.Errorf("%w %s: name: use 1 to %d letters, digits, '_' or '-'", ErrInvalidServer, quoteName(srv.Name), MaxNameLen)
		}
	} else if err := srv.Validate(); err != nil {
		return nil, err
	}
	if opts.ClientName == "" {
		opts.ClientName = "deepgraph"
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = "devel"
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{srv: srv, opts: opts, log: logger, secrets: srv.secrets(), sem: make(chan struct{}, 1), changed: make(chan struct{}, 1)}
	c.life, c.stopLife = context.WithCancel(context.Background())
	c.client = sdk.NewClient(&sdk.Implementation{Name: opts.ClientName, Version: opts.ClientVersion}, &sdk.ClientOptions{
		Logger: logger,
		// No roots, sampling or elicitation: a server gets nothing from
		// this client but tool calls.
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			c.listChanged.Store(true)
			select {
			case c.changed <- struct{}{}:
			default:
			}
		},
	})
	if _, err := c.ensure(ctx, true); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Name is the server's name.
func (c *Client) Name() string { return c.srv.Name }

// Server returns the server's configuration.
func (c *Client) Server() Server { return c.srv }

// Tools returns the server's tools as last listed.
func (c *Client) Tools() []tools.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.coll.Tools()
}

// Collection returns the server's tools, implementing tools.Dynamic. It is
// cheap: the same collection is returned until the server says its tools
// changed (they are listed again then) or the server is restarted. If the
// server stopped, Collection restarts it; if that or the listing fails, it
// returns the tools last listed and the error.
func (c *Client) Collection(ctx context.Context) (*tools.Collection, error) {
	if _, err := c.ensure(ctx, false); err != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.coll, err
	}
	if c.listChanged.Load() {
		if err := c.relist(ctx); err != nil {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.coll, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.coll, nil
}

// Close ends the connection; a stdio server is stopped (stdin closed,
// then SIGTERM and SIGKILL to its process group) and reaped. Close is
// idempotent; the tools fail with ErrClosed afterwards.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	s := c.sess
	c.sess = nil
	c.mu.Unlock()
	c.stopLife()
	c.sem <- struct{}{} // wait for a connection being made to give up
	<-c.sem
	if s != nil {
		c.closeSession(s)
	}
	c.wg.Wait()
	return nil
}

// current returns the live session, nil if there is none.
func (c *Client) current() (*session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.sess != nil && !c.sess.ended() {
		return c.sess, nil
	}
	return nil, nil
}

// ensure returns the live session, connecting when there is none. Unless
// force is set, a connection is not attempted while a failed one's backoff
// lasts.
func (c *Client) ensure(ctx context.Context, force bool) (*session, error) {
	if s, err := c.current(); s != nil || err != nil {
		return s, err
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.sem }()
	if s, err := c.current(); s != nil || err != nil {
		return s, err
	}
	c.mu.Lock()
	if !force && time.Now().Before(c.retryAt) {
		err := c.lastErr
		c.mu.Unlock()
		return nil, err
	}
	old := c.sess
	c.sess = nil
	c.mu.Unlock()
	if old != nil {
		c.closeSession(old) // ended already: this reaps what is left
	}

	s, ts, err := c.dial(ctx)
	c.mu.Lock()
	if err != nil {
		if ctx.Err() == nil {
			c.failures++
			c.retryAt = time.Now().Add(min(time.Second<<min(c.failures-1, 5), 30*time.Second))
			c.lastErr = err
		}
		c.mu.Unlock()
		return nil, err
	}
	if c.closed {
		c.mu.Unlock()
		c.closeSession(s) // Close waits for c.sem, so for this
		return nil, ErrClosed
	}
	c.failures, c.lastErr = 0, nil
	c.sess = s
	c.coll = c.collection(c.buildTools(ts))
	n := c.coll.Len()
	c.mu.Unlock()
	c.log.Info("mcp: connected", "server", c.srv.Name, "tools", n)
	return s, nil
}

// relist lists the tools again after the server said they changed.
func (c *Client) relist(ctx context.Context) error {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.sem }()
	if !c.listChanged.Swap(false) {
		return nil // listed meanwhile
	}
	s, err := c.current()
	if err != nil || s == nil {
		c.listChanged.Store(true)
		return c.errorf("tools changed, but the server stopped before they could be listed")
	}
	lctx, cancel := context.WithTimeout(ctx, c.srv.timeout())
	defer cancel()
	stop := context.AfterFunc(c.life, cancel) // Close does not wait for it
	defer stop()
	ts, err := listTools(lctx, s.cs)
	if err != nil {
		c.listChanged.Store(true)
		return c.errorf("listing tools: %s", c.scrub(err.Error()))
	}
	coll := c.collection(c.buildTools(ts))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == s {
		c.coll = coll
		c.log.Info("mcp: tools changed", "server", c.srv.Name, "tools", coll.Len())
	}
	return nil
}

// dial makes a connection and lists the tools, within the server's timeout.
func (c *Client) dial(ctx context.Context) (*session, []*sdk.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.srv.timeout())
	defer cancel()
	stop := context.AfterFunc(c.life, cancel)
	defer stop()

	var (
		t    sdk.Transport
		proc *process
		err  error
	)
	switch {
	case c.opts.Transport != nil:
		if t, err = c.opts.Transport(ctx); err != nil {
			return nil, nil, c.errorf("connecting: %s", c.scrub(err.Error()))
		}
	case c.srv.URL != "":
		t = &sdk.StreamableClientTransport{Endpoint: c.srv.URL, HTTPClient: newHTTPClient(c.srv, c.opts.HTTPClient)}
	default:
		var stdout io.ReadCloser
		proc, stdout, err = startProcess(c.srv, c.log)
		if err != nil {
			return nil, nil, c.errorf("%s", c.scrub(describeStart(c.srv, err).Error()))
		}
		t = &sdk.IOTransport{Reader: stdoutReader{stdout}, Writer: &stdinCloser{p: proc}}
	}
	cs, err := c.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, c.startError("connecting", err, proc, ctx)
	}
	s := &session{cs: cs, proc: proc, done: make(chan struct{})}
	c.watch(s)
	c.listChanged.Store(false) // a change from now on is listed again
	ts, err := listTools(ctx, cs)
	if err != nil {
		err = c.startError("listing tools", err, proc, ctx)
		c.closeSession(s)
		return nil, nil, err
	}
	return s, ts, nil
}

// startError explains a failed start, stopping a stdio server.
func (c *Client) startError(doing string, err error, proc *process, ctx context.Context) error {
	if proc != nil {
		(&stdinCloser{p: proc}).Close()
		if tail := proc.stderr.lastLines(); tail != "" {
			c.log.Warn("mcp: server failed to start", "server", c.srv.Name, "exit", proc.exitText(), "stderr", c.scrub(tail))
		}
		if ctx.Err() == nil {
			return c.errorf("%s: %s (the server ended: %s)", doing, c.scrub(err.Error()), proc.exitText())
		}
	}
	if ctx.Err() != nil && c.life.Err() == nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return c.errorf("%s: no answer within %s (set its timeout if it needs longer to start)", doing, c.srv.timeout())
		}
		return fmt.Errorf("mcp: server %s: %s: %w", c.srv.Name, doing, ctx.Err())
	}
	return c.errorf("%s: %s", doing, c.scrub(err.Error()))
}

// watch follows a session until its connection ends, and records why.
func (c *Client) watch(s *session) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_ = s.cs.Wait()
		reason := "the connection closed"
		if s.proc != nil {
			// Its stdout closed: it has exited or will be made to.
			if !s.closing.Load() {
				_ = s.cs.Close()
			}
			<-s.proc.exited
			reason = s.proc.exitText()
		}
		c.mu.Lock()
		s.reason = reason
		close(s.done)
		c.mu.Unlock()
		if !s.closing.Load() {
			attrs := []any{"server", c.srv.Name, "reason", reason}
			if s.proc != nil {
				if tail := s.proc.stderr.lastLines(); tail != "" {
					attrs = append(attrs, "stderr", c.scrub(tail))
				}
			}
			c.log.Warn("mcp: server stopped; it will be restarted on the next call", attrs...)
		}
	}()
}

// closeSession closes s and waits until it has ended.
func (c *Client) closeSession(s *session) {
	s.closing.Store(true)
	_ = s.cs.Close()
	<-s.done
}

// lose records that s failed with err and closes it (in the background:
// the call in flight returns at once). It returns why it stopped.
func (c *Client) lose(s *session, err error) string {
	if s.proc != nil {
		// The process exits about when its stdout closes; give the exit a
		// moment to be reaped, for its status.
		select {
		case <-s.proc.exited:
		case <-time.After(time.Second):
		}
	}
	c.mu.Lock()
	reason := s.reason
	if reason == "" {
		if s.proc != nil && s.proc.exitText() != "still running" {
			reason = s.proc.exitText()
		} else {
			reason = c.scrub(err.Error())
		}
	}
	if c.sess == s {
		c.sess = nil
	}
	c.mu.Unlock()
	if !s.ended() {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.closeSession(s)
		}()
	}
	return reason
}

// errTimedOut is the cause of a call's context when its timeout passed.
var errTimedOut = errors.New("mcp: call timed out")

// call runs the server's tool remote (named name here).
func (c *Client) call(ctx context.Context, name, remote string, args json.RawMessage) (tools.Result, error) {
	s, err := c.ensure(ctx, true)
	if err != nil {
		switch {
		case errors.Is(err, ErrClosed):
			return tools.Failf("%s was not run: the MCP client of %s is closed", name, c.srv.Name), err
		case ctx.Err() != nil:
			return tools.Failf("%s was cancelled", name), ctx.Err()
		}
		return tools.Failf("MCP server %s is not running and could not be restarted: %v", c.srv.Name, err), nil
	}
	var arguments any = map[string]any{}
	if a := bytes.TrimSpace(args); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
		arguments = json.RawMessage(a)
	}
	timeout := c.srv.timeout()
	cctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimedOut)
	defer cancel()
	res, err := s.cs.CallTool(cctx, &sdk.CallToolParams{Name: remote, Arguments: arguments})
	if err == nil {
		return toResult(res), nil
	}
	var wire *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		return tools.Failf("%s was cancelled", name), ctx.Err()
	case errors.Is(context.Cause(cctx), errTimedOut):
		c.log.Info("mcp: call timed out", "server", c.srv.Name, "tool", remote, "timeout", timeout)
		return tools.Failf("%s timed out after %s", name, fmtDuration(timeout)), nil
	case s.ended() || connectionLost(err):
		reason := c.lose(s, err)
		return tools.Failf("MCP server %s stopped (%s); it will be restarted on the next call", c.srv.Name, reason), nil
	case errors.As(err, &wire) && wire.Code != codeRejected:
		// The server answered with an error: it is alive.
		return tools.Failf("%s failed: the MCP server answered: %s", name, c.scrub(wire.Message)), nil
	}
	// Something failed on the way (an HTTP server that refused the
	// request, say, having forgotten the session after a restart): if the
	// server no longer answers a ping, the connection is as good as lost.
	pctx, cancel := context.WithTimeout(ctx, min(timeout, pingTimeout))
	defer cancel()
	if perr := s.cs.Ping(pctx, nil); perr != nil && ctx.Err() == nil {
		reason := c.lose(s, err)
		return tools.Failf("MCP server %s stopped (%s); it will be restarted on the next call", c.srv.Name, reason), nil
	}
	return tools.Failf("%s failed: %s", name, c.scrub(err.Error())), nil
}

// pingTimeout bounds the ping that checks a server after an unclear failure.
const pingTimeout = 5 * time.Second

// codeRejected is the code of the error the SDK's transports make up for a
// message they could not deliver (jsonrpc2.ErrRejected): no answer of the
// server's.
const codeRejected = -32005

// connectionLost reports whether err means the connection is gone.
func connectionLost(err error) bool {
	var netErr net.Error
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.As(err, &netErr)
}

// listTools lists all of a server's tools, following pages.
func listTools(ctx context.Context, cs *sdk.ClientSession) ([]*sdk.Tool, error) {
	var out []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// errorf is an error naming the server.
func (c *Client) errorf(format string, args ...any) error {
	return fmt.Errorf("mcp: server %s: %s", c.srv.Name, fmt.Sprintf(format, args...))
}

// scrub hides the server's secrets in s (an error from below may quote a
// URL with its query, or a server may echo a header).
func (c *Client) scrub(s string) string {
	if c.srv.URL != "" && strings.Contains(c.srv.URL, "?") {
		s = strings.ReplaceAll(s, c.srv.URL, redact.URL(c.srv.URL))
	}
	for _, v := range c.secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

// fmtDuration prints 60s as "1m0s" → "60s" and 90s as "1m30s".
func fmtDuration(d time.Duration) string {
	if d%time.Second == 0 && d < 10*time.Minute {
		return fmt.Sprintf("%ds", int(d/time.Second))
	}
	return d.String()
}
