package server

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/telemetry"
)

// Options configure a Server.
type Options struct {
	// Token, when set, is the token every API request must carry, as
	// x-api-key or Authorization: Bearer.
	Token string
	// CORSOrigins are the other origins whose pages may call the API.
	CORSOrigins []string
	// MaxRunning bounds the runs executing at once (default 4); QueueSize
	// the runs waiting beyond them (0: none wait).
	MaxRunning int
	QueueSize  int
	// ResumeInterrupted continues at Start the runs a stopped server left
	// running.
	ResumeInterrupted bool
	// MaxBody bounds a request body (default 64 KiB); MaxQuestion a
	// question or task, in characters (default 8192).
	MaxBody     int64
	MaxQuestion int
	// Loopback says the server listens on loopback only: requests must
	// then name a loopback host (no DNS rebinding).
	Loopback bool
	// Version is the server's version, in the assistants' metadata
	// "deepgraph" (GET /info's version is the Agent Server API's).
	Version string
	// Redact masks secrets in errors recorded or sent (may be nil).
	Redact func(string) string
	Logger *slog.Logger
	// Telemetry, when set, traces each API request (a server span per
	// route, continuing a caller's W3C traceparent) and each run (a trace
	// of its own whose root links to the request that queued it); its
	// context reaches the Engine, which wraps the run's models and tools.
	Telemetry *telemetry.Telemetry
}

// Defaults of Options.
const (
	DefaultMaxRunning  = 4
	DefaultMaxBody     = 64 << 10
	DefaultMaxQuestion = 8192
)

// Server is research serve: the LangGraph Agent Server API (package
// agentserver) over the run store — the deep-search graph as the assistant
// "research", the agent as "agent" — and, at /, the web page.
type Server struct {
	opts  Options
	store *app.Store
	eng   Engine
	mux   *http.ServeMux
	log   *slog.Logger
	// api is the Agent Server API; closeGraphs releases its graphs.
	api         *agentserver.Server
	closeGraphs func()
}

//go:embed web/*.html web/*.js web/*.css
var webFiles embed.FS

// New returns a server over the store, building runs with eng. Start
// starts again what a stopped server left; Handler serves the API and the
// page. It fails when the research graph cannot be set up.
func New(st *app.Store, eng Engine, opts Options) (*Server, error) {
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
	s := &Server{opts: opts, store: st, eng: eng, log: opts.Logger, mux: http.NewServeMux()}
	if err := s.serveGraphs(); err != nil {
		return nil, err
	}
	web, _ := fs.Sub(webFiles, "web")
	s.mux.Handle("GET /assets/", s.page(http.StripPrefix("/assets/", http.FileServerFS(web))))
	s.mux.Handle("GET /{$}", s.page(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, web, "index.html")
	})))
	s.mux.Handle("/", s.api.Handler())
	return s, nil
}

// Handler serves the API and the page.
func (s *Server) Handler() http.Handler {
	return Guard(s.mux, GuardOptions{CORSOrigins: s.opts.CORSOrigins, Loopback: s.opts.Loopback,
		ContentSecurityPolicy: contentSecurityPolicy,
		AllowHeaders:          []string{"Authorization", "Content-Type", "Last-Event-ID", "X-Api-Key", "X-Auth-Scheme"},
		ExposeHeaders:         []string{"Content-Location", "Location", "X-Pagination-Next", "X-Pagination-Total"}})
}

// Start starts again the runs a stopped server left pending, and — with
// ResumeInterrupted — continues those it left running
// (agentserver.Server.ResumeRuns).
func (s *Server) Start(ctx context.Context) error {
	if err := s.api.ResumeRuns(ctx, s.opts.ResumeInterrupted); err != nil {
		s.log.Warn("could not start again a run a stopped server left", "err", s.opts.Redact(err.Error()))
	}
	return nil
}

// Shutdown stops taking runs, cancels the running ones — each keeps what
// it finished and is recorded as interrupted, for ResumeInterrupted — and
// waits for them (or ctx).
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.api.Shutdown(ctx)
	s.closeGraphs()
	return err
}

// serveGraphs sets up the Agent Server API with the server's token (also
// as x-api-key), origins and limits, and serves the research graph and,
// when the server allows agent runs, the agent and the planning flow.
func (s *Server) serveGraphs() error {
	records := &runStoreRecords{runs: s.store.Runs}
	api, err := agentserver.New(agentserver.Options{Checkpointer: s.store.Checkpointer, Store: records, Token: s.opts.Token,
		CORSOrigins: slices.Clone(s.opts.CORSOrigins), Loopback: s.opts.Loopback, MaxBody: s.opts.MaxBody, Logger: s.log,
		MaxRunning: s.opts.MaxRunning, MaxQueued: s.opts.QueueSize, Route: s.traced})
	if err != nil {
		return err
	}
	// The assistants' metadata "deepgraph" is what the page reads before a
	// run: the server's version and the efforts, back ends and models a
	// run's configurable may choose.
	choices, _ := json.Marshal(s.choices())
	md := agentserver.Metadata{"deepgraph": choices}
	base := apiBase{eng: s.eng, cp: s.store.Checkpointer, maxQuestion: s.opts.MaxQuestion, redact: s.opts.Redact, metadata: md, records: records, tel: s.opts.Telemetry}
	ra := &researchAPI{apiBase: base}
	closeResearch, err := ra.serveGraphs(context.Background(), api)
	if err != nil {
		return fmt.Errorf("the research graph cannot be served: %s", s.opts.Redact(err.Error()))
	}
	s.api, s.closeGraphs = api, closeResearch
	if !slices.Contains(s.eng.Choices().Kinds, runstore.KindAgent) {
		return nil
	}
	aa := &agentAPI{apiBase: base}
	closeAgent, err := aa.serve(context.Background(), api)
	if err != nil {
		s.log.Warn("the agent is not served", "err", s.opts.Redact(err.Error()))
		return nil
	}
	s.closeGraphs = func() { closeAgent(); closeResearch() }
	fa := &flowAPI{apiBase: base}
	closeFlow, err := fa.serve(context.Background(), api)
	if err != nil {
		s.log.Warn("the planning flow is not served", "err", s.opts.Redact(err.Error()))
		return nil
	}
	s.closeGraphs = func() { closeFlow(); closeAgent(); closeResearch() }
	return nil
}

// contentSecurityPolicy lets the page run its own script and style and
// reach its own origin, and nothing else: no inline script, no foreign
// resource, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// page serves the web page's files.
func (s *Server) page(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}
