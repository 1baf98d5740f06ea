package server

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
)

// Options configure a Server.
type Options struct {
	// Token, when set, is the bearer token every API request must carry.
	Token string
	// CORSOrigins are the other origins whose pages may call the API.
	CORSOrigins []string
	// MaxRunning bounds the runs executing at once (default 4); QueueSize
	// the runs waiting beyond them (0: none wait).
	MaxRunning int
	QueueSize  int
	// ResumeInterrupted resumes at Start the runs a stopped server left
	// running.
	ResumeInterrupted bool
	// MaxBody bounds a request body (default 64 KiB); MaxQuestion a
	// question or task, in characters (default 8192).
	MaxBody     int64
	MaxQuestion int
	// Loopback says the server listens on loopback only: requests must
	// then name a loopback host (no DNS rebinding).
	Loopback bool
	// Version is reported by GET /info.
	Version string
	// Redact masks secrets in errors recorded or sent (may be nil).
	Redact func(string) string
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultMaxRunning  = 4
	DefaultMaxBody     = 64 << 10
	DefaultMaxQuestion = 8192
)

// Server is research serve: the HTTP API over the run store, the queue that
// executes runs, and the web page.
type Server struct {
	opts  Options
	store *app.Store
	eng   Engine
	runs  *queue
	mux   *http.ServeMux
	log   *slog.Logger
}

//go:embed web/*.html web/*.js web/*.css
var webFiles embed.FS

// New returns a server over the store, building runs with eng. Start
// begins executing runs; Handler serves the API and the page.
func New(st *app.Store, eng Engine, opts Options) *Server {
	if opts.MaxRunning <= 0 {
		opts.MaxRunning = DefaultMaxRunning
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.MaxQuestion <= 0 {
		opts.MaxQuestion = DefaultMaxQuestion
	}
	if opts.Redact == nil {
		opts.Redact = func(s string) string { return s }
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, store: st, eng: eng, log: opts.Logger}
	s.runs = newQueue(st, eng, opts.Logger, opts.Redact, opts.MaxRunning, opts.QueueSize)
	s.mux = http.NewServeMux()
	for _, rt := range routes() {
		s.mux.Handle(rt.Method+" "+rt.Path, s.wrap(rt))
	}
	web, _ := fs.Sub(webFiles, "web")
	s.mux.Handle("GET /assets/", s.page(http.StripPrefix("/assets/", http.FileServerFS(web))))
	s.mux.Handle("GET /{$}", s.page(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, web, "index.html")
	})))
	return s
}

// Handler serves the API and the page.
func (s *Server) Handler() http.Handler { return s.guard(s.mux) }

// Start queues again the runs a previous server left queued, and — with
// ResumeInterrupted — the runs it left running.
func (s *Server) Start(ctx context.Context) error {
	runs, err := s.store.Runs.List(ctx, runstore.ListOptions{})
	if err != nil {
		return fmt.Errorf("reading the stored runs: %w", err)
	}
	slices.Reverse(runs) // oldest first: the order they came in
	now := time.Now()
	for _, sum := range runs {
		status := sum.Effective(now, runstore.Alive)
		wasRunning := sum.Status == runstore.StatusRunning || sum.Error == stoppedByServer
		switch {
		case status == runstore.StatusQueued:
		case status == runstore.StatusInterrupted && wasRunning && s.opts.ResumeInterrupted:
		default:
			continue
		}
		run, err := s.store.Runs.Get(ctx, sum.ID)
		if err != nil {
			return err
		}
		err = s.runs.add(ctx, run, nil, func(run *runstore.Run) error {
			run.Status, run.Updated = runstore.StatusQueued, time.Now().UTC()
			return s.store.Runs.Update(ctx, run)
		})
		if err != nil {
			s.log.Warn("could not queue a stored run again", "run", run.ID, "err", err)
			continue
		}
		s.log.Info("queued a run again", "run", run.ID, "was", status)
	}
	return nil
}

// Shutdown stops taking runs, cancels the running ones — each stores what
// it finished and is recorded as interrupted — and waits for them (or ctx).
func (s *Server) Shutdown(ctx context.Context) error { return s.runs.drain(ctx) }

// Peak is the most runs that ran at once.
func (s *Server) Peak() int {
	_, _, peak := s.runs.counts()
	return peak
}

// contentSecurityPolicy lets the page run its own script and style and
// reach its own origin, and nothing else: no inline script, no foreign
// resource, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// guard applies to every request: security headers, the Host check on a
// loopback server, the Origin check and CORS.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if s.opts.Loopback && !loopbackHost(r.Host) {
			writeError(w, http.StatusMisdirectedRequest, codeForbidden,
				fmt.Sprintf("host %q is not this server's: it listens on loopback, so use http://127.0.0.1 or http://localhost", r.Host))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r) {
			if !slices.Contains(s.opts.CORSOrigins, strings.ToLower(origin)) {
				writeError(w, http.StatusForbidden, codeForbidden,
					fmt.Sprintf("origin %s may not call this API; list it under serve.cors_origins to allow it", origin))
				return
			}
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions {
				h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// page serves the web page's files.
func (s *Server) page(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}

// wrap applies a route's checks: the token, the body's type and size.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if rt.Auth && s.opts.Token != "" && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="deepgraph"`)
			writeError(w, http.StatusUnauthorized, codeUnauthorized, "this server needs its token: send Authorization: Bearer <serve.token>")
			return
		}
		if rt.Request != nil {
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/json") {
				writeError(w, http.StatusUnsupportedMediaType, codeUnsupported, "send the body as JSON with Content-Type: application/json")
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBody)
		}
		rt.Handle(s, w, r)
	})
}

func (s *Server) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.opts.Token)) == 1
}

// sameOrigin reports whether a request's Origin is the server's own.
func sameOrigin(origin string, r *http.Request) bool {
	o := strings.ToLower(origin)
	host := strings.ToLower(r.Host)
	return o == "http://"+host || o == "https://"+host
}

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(strings.ToLower(host), "[]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopback reports whether an address to listen on (host:port) reaches
// this machine only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ErrNeedsToken is Check's refusal to listen beyond loopback without a
// token.
var ErrNeedsToken = errors.New("a token is needed to listen beyond loopback")

// Check refuses to serve the API beyond this machine without a token.
func Check(addr, token string) error {
	if IsLoopback(addr) || token != "" {
		return nil
	}
	return fmt.Errorf("%w: %s is reachable from other machines, and anyone reaching it could start runs on your keys. "+
		"Set a token (serve.token in the config file, or DEEPGRAPH_SERVE_TOKEN=$(openssl rand -hex 32)) and send it as "+
		"Authorization: Bearer …, or listen on 127.0.0.1", ErrNeedsToken, addr)
}
