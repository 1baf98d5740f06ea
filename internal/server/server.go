package server

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/telemetry"
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

// Server is research serve: the HTTP API over the run store, the queue that
// executes runs, and the web page.
type Server struct {
	opts  Options
	store *app.Store
	eng   Engine
	runs  *queue
	mux   *http.ServeMux
	log   *slog.Logger
	// agents is the LangGraph Agent Server API, under AgentAPIPrefix;
	// closeAgents releases its graphs.
	agents      *agentserver.Server
	closeAgents func()
}

// AgentAPIPrefix is where the LangGraph Agent Server API is served: point
// LangGraph's clients at http://host:port/lg (Agent Chat UI's deployment
// URL, the SDKs' apiUrl), with the assistant "research".
const AgentAPIPrefix = "/lg"

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
	s.runs = newQueue(st, eng, opts.Logger, opts.Redact, opts.MaxRunning, opts.QueueSize, opts.Telemetry)
	s.mux = http.NewServeMux()
	for _, rt := range routes() {
		s.mux.Handle(rt.Method+" "+rt.Path, s.traced(rt.Method+" "+rt.Path, s.wrap(rt)))
	}
	s.mountAgentAPI()
	web, _ := fs.Sub(webFiles, "web")
	s.mux.Handle("GET /assets/", s.page(http.StripPrefix("/assets/", http.FileServerFS(web))))
	s.mux.Handle("GET /{$}", s.page(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, web, "index.html")
	})))
	return s
}

// Handler serves the API and the page.
func (s *Server) Handler() http.Handler {
	return Guard(s.mux, GuardOptions{CORSOrigins: s.opts.CORSOrigins, Loopback: s.opts.Loopback,
		ContentSecurityPolicy: contentSecurityPolicy,
		AllowHeaders:          []string{"Authorization", "Content-Type", "Last-Event-ID", "X-Api-Key", "X-Auth-Scheme"},
		ExposeHeaders:         []string{"Content-Location", "Location", "X-Pagination-Next", "X-Pagination-Total"}})
}

// Start queues again the runs a previous server left queued, and — with
// ResumeInterrupted — continues the runs it left running (also those of
// the Agent Server API: agentserver.Server.ResumeRuns).
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
		if apiRecord(run) != nil {
			continue // the Agent Server API's: ResumeRuns below
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
	if s.agents != nil {
		if err := s.agents.ResumeRuns(ctx, s.opts.ResumeInterrupted); err != nil {
			s.log.Warn("could not start again a run of the Agent Server API", "err", s.opts.Redact(err.Error()))
		}
	}
	return nil
}

// Shutdown stops taking runs, cancels the running ones — each stores what
// it finished and is recorded as interrupted — and waits for them (or ctx).
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.runs.drain(ctx)
	if s.agents != nil {
		err = errors.Join(err, s.agents.Shutdown(ctx))
		s.closeAgents()
	}
	return err
}

// mountAgentAPI serves the LangGraph Agent Server API under AgentAPIPrefix,
// with the server's token (also as x-api-key), origins and limits. A
// server whose research graph cannot be set up serves the rest and logs
// why.
func (s *Server) mountAgentAPI() {
	records := &runStoreRecords{runs: s.store.Runs}
	api, err := agentserver.New(agentserver.Options{Checkpointer: s.store.Checkpointer, Store: records, Token: s.opts.Token,
		CORSOrigins: slices.Clone(s.opts.CORSOrigins), Loopback: s.opts.Loopback, MaxBody: s.opts.MaxBody, Logger: s.log,
		MaxRunning: s.opts.MaxRunning, MaxQueued: s.opts.QueueSize, Route: s.traced})
	// The assistants' metadata "deepgraph" is what the page reads before a
	// run: the server's version and the efforts, back ends and models a
	// run's configurable may choose.
	choices, _ := json.Marshal(s.choices())
	md := agentserver.Metadata{"deepgraph": choices}
	if err == nil {
		ra := &researchAPI{eng: s.eng, cp: s.store.Checkpointer, maxQuestion: s.opts.MaxQuestion, redact: s.opts.Redact, metadata: md, records: records, tel: s.opts.Telemetry}
		s.closeAgents, err = ra.serveGraphs(context.Background(), api)
	}
	if err == nil && slices.Contains(s.eng.Choices().Kinds, runstore.KindAgent) {
		aa := &agentAPI{eng: s.eng, cp: s.store.Checkpointer, maxQuestion: s.opts.MaxQuestion, redact: s.opts.Redact, metadata: md, records: records, tel: s.opts.Telemetry}
		closeResearch := s.closeAgents
		closeAgent, aerr := aa.serve(context.Background(), api)
		if aerr != nil {
			s.log.Warn("the agent is not served over the LangGraph Agent Server API", "err", s.opts.Redact(aerr.Error()))
		} else {
			s.closeAgents = func() { closeAgent(); closeResearch() }
		}
	}
	if err != nil {
		s.log.Warn("the LangGraph Agent Server API is not served", "err", s.opts.Redact(err.Error()))
		return
	}
	s.agents = api
	s.mux.Handle(AgentAPIPrefix+"/", http.StripPrefix(AgentAPIPrefix, api.Handler()))
}

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
		if rt.Auth && s.opts.Token != "" && !Authorized(r, s.opts.Token) {
			writeUnauthorized(w)
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
