package httpserve

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Options configure a Server. Zero values take the defaults.
type Options struct {
	// ReadHeaderTimeout bounds the wait for a request's headers (default
	// 10 s).
	ReadHeaderTimeout time.Duration
	// BodyTimeout bounds the reading of a request's body (default 30 s).
	BodyTimeout time.Duration
	// WriteTimeout bounds each write of a response — each event of a stream
	// — not the whole response (default 30 s).
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection without a new request
	// after this long (default 60 s).
	IdleTimeout time.Duration
	// MaxConns bounds the connections open at once (default: half the
	// process's open-file limit, at most 4096; see DefaultMaxConns).
	MaxConns int
	// MaxConnsPerAddr bounds the connections of one client address
	// (default 64, or MaxConns if lower).
	MaxConnsPerAddr int
	// Logger receives a warning, at most once a minute, when connections
	// were closed or refused for the limits (may be nil).
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxConnsPerAddr   = 64
)

// DefaultMaxConns is Options.MaxConns's default: half the process's
// open-file limit (the other half is the server's, for its store, its
// outgoing calls and the rest), at least 16 and at most 4096; 1024 where
// the limit cannot be read.
func DefaultMaxConns() int {
	n := openFileLimit()
	if n <= 0 {
		return 1024
	}
	return max(16, min(4096, n/2))
}

// Server is an http.Server with the timeouts and limits of the package
// documentation.
type Server struct {
	http *http.Server
	lim  *limiter
	opts Options
}

// New returns a server of h.
func New(h http.Handler, o Options) *Server {
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns()
	}
	if o.MaxConnsPerAddr <= 0 {
		o.MaxConnsPerAddr = DefaultMaxConnsPerAddr
	}
	o.MaxConnsPerAddr = min(o.MaxConnsPerAddr, o.MaxConns)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: o, lim: newLimiter(o.MaxConns, o.MaxConnsPerAddr, o.Logger)}
	s.http = &http.Server{
		Handler:           s.middleware(h),
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		IdleTimeout:       o.IdleTimeout,
		ConnState:         s.lim.connState,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if lc, ok := c.(*limitedConn); ok {
				return context.WithValue(ctx, connKey{}, lc)
			}
			return ctx
		},
		ErrorLog: slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug),
	}
	return s
}

// Serve accepts connections on ln, within the limits, and serves them. It
// returns as http.Server.Serve does: http.ErrServerClosed after Shutdown
// or Close.
func (s *Server) Serve(ln net.Listener) error {
	return s.http.Serve(&limitedListener{Listener: ln, lim: s.lim})
}

// Shutdown stops accepting and waits for the requests being served (or
// ctx), as http.Server.Shutdown does, and for the refused connections
// being closed (a second at most).
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	s.lim.closing.Wait()
	return err
}

// Close closes the listener and every connection at once, and waits for
// the refused connections being closed (a second at most).
func (s *Server) Close() error {
	err := s.http.Close()
	s.lim.closing.Wait()
	return err
}

// Stats are a server's connection counts.
type Stats struct {
	// Open are the connections open now.
	Open int
	// Evicted were closed to make room (idle, or still sending their
	// request); Refused were answered 503 at once.
	Evicted, Refused int
}

// Stats returns the server's connection counts.
func (s *Server) Stats() Stats { return s.lim.stats() }

// connKey is the context key of a request's *limitedConn.
type connKey struct{}

// middleware applies the body and write deadlines and tells the limiter
// what the connection is doing.
func (s *Server) middleware(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*limitedConn)
		rc := http.NewResponseController(w)
		dw := &deadlineWriter{ResponseWriter: w, rc: rc, timeout: s.opts.WriteTimeout}
		dw.extend()
		if r.Body != nil && r.Body != http.NoBody {
			_ = rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
			s.lim.setPhase(c, phaseBody)
			r.Body = &deadlineBody{ReadCloser: r.Body, read: func() {
				_ = rc.SetReadDeadline(time.Time{})
				s.lim.setPhase(c, phaseServing)
			}, closed: func() { s.lim.setPhase(c, phaseServing) }}
		} else {
			s.lim.setPhase(c, phaseServing)
		}
		// The server flushes the response after the handler returns: that
		// write gets its deadline too.
		defer dw.extend()
		h.ServeHTTP(dw, r)
	})
}

// deadlineWriter moves the connection's write deadline before each write,
// so that each write — each event of a stream — has WriteTimeout, and a
// response as a whole has none.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *deadlineWriter) extend() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) }

func (w *deadlineWriter) WriteHeader(code int) {
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(p)
}

// FlushError flushes with a fresh deadline (http.ResponseController.Flush
// finds it).
func (w *deadlineWriter) FlushError() error {
	w.extend()
	return w.rc.Flush()
}

// Flush implements http.Flusher for handlers that assert it.
func (w *deadlineWriter) Flush() { _ = w.FlushError() }

// Unwrap gives http.ResponseController the writer below.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// deadlineBody is a request body whose read deadline is lifted once it
// has been read to its end, so that it cannot cut the response; its
// connection then counts as serving. A body closed unread keeps the
// deadline, for the server discards what is left of it after the handler.
type deadlineBody struct {
	io.ReadCloser
	read, closed func()
	done         bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.read()
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	err := b.ReadCloser.Close()
	if !b.done {
		b.done = true
		b.closed()
	}
	return err
}
