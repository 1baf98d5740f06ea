package agentserver

import (
	"context"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/drain"
)

// Options configure a Server.
type Options struct {
	// Checkpointer is where the threads' states live: the checkpointer the
	// served graphs were compiled with (required).
	Checkpointer graph.Checkpointer
	// Token, when set, must come with every request but GET /ok, as
	// x-api-key (what the LangGraph SDKs send) or Authorization: Bearer.
	Token string
	// CORSOrigins are the other origins whose pages may call the API (no
	// wildcard). A request with any other cross-site Origin is refused.
	CORSOrigins []string
	// Loopback says the server listens on loopback only: requests must
	// then name a loopback host (no DNS rebinding).
	Loopback bool
	// MaxBody bounds a request body (default DefaultMaxBody).
	MaxBody int64
	// Version is GET /info's version (default "0.4.0": clients such as
	// Studio read it as the LangGraph API version).
	Version string
	// Heartbeat is how often a quiet stream sends a comment line (default
	// DefaultHeartbeat), so that proxies and the SDKs' idle detection keep it.
	Heartbeat time.Duration
	// MaxThreads bounds the threads the server keeps (default
	// DefaultMaxThreads): beyond it, creating one is refused with 429 until
	// some are deleted, so that clients cannot fill its memory.
	MaxThreads int
	// MaxRunning bounds the runs executing at once (0: no bound); the
	// runs beyond it wait, pending, for one to end. MaxQueued bounds those
	// waiting: a run beyond MaxRunning+MaxQueued is refused with 429 and a
	// Retry-After of one run's time at the rate runs have been ending (30 s
	// before any ended), so that clients cannot pile up work on the
	// server's keys.
	MaxRunning int
	MaxQueued  int
	// Store keeps the records of threads and runs (default: a
	// MemoryStore, for this process only). New reads it.
	Store Store
	// Route, when set, wraps the handler of each route (its pattern, as
	// "POST /threads/{thread_id}/runs/stream"), behind the server's
	// checks: to trace or meter requests. A run's context carries the
	// values of its request's (a trace span), so Build can link to it.
	Route func(pattern string, h http.Handler) http.Handler
	// Logger logs refused requests and failed runs (default: none).
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultMaxBody    = 1 << 20
	DefaultHeartbeat  = 5 * time.Second
	DefaultMaxThreads = 10000
	defaultVersion    = "0.4.0"
)

// Server serves graphs over the LangGraph Agent Server API.
type Server struct {
	opts  Options
	cp    graph.Checkpointer
	store Store
	// queues write each thread's records (its own and its runs') in
	// order, the newest last (records.go); wmu guards them.
	wmu    sync.Mutex
	queues map[string]*recordQueue
	log    *slog.Logger
	mux    *http.ServeMux

	ctx    context.Context // ends at Shutdown: runs run under it
	cancel context.CancelCauseFunc
	runsWG sync.WaitGroup

	mu         sync.Mutex
	assistants []*assistant
	threads    map[string]*thread
	runs       map[string]*run
	closing    bool
	// admitted counts the runs pending or running (MaxRunning,
	// MaxQueued); slots holds one token per executing run.
	admitted int
	slots    chan struct{}
	// drained measures how fast runs end, for the Retry-After of a run
	// refused beyond MaxRunning+MaxQueued.
	drained *drain.Meter
	// left are the runs a stopped server left undone (ResumeRuns).
	left []leftRun
}

// assistant is a served graph: LangGraph's "system" assistant of a graph.
type assistant struct {
	id, graphID string
	g           Graph
	info        graphInfo
	created     time.Time
}

// New returns a server; add graphs with Serve, then serve Handler.
func New(opts Options) (*Server, error) {
	if opts.Checkpointer == nil {
		return nil, errors.New("agentserver: Options.Checkpointer is required: give the checkpointer the served graphs were compiled with")
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.Version == "" {
		opts.Version = defaultVersion
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.MaxThreads <= 0 {
		opts.MaxThreads = DefaultMaxThreads
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Store == nil {
		opts.Store = NewMemoryStore()
	}
	s := &Server{opts: opts, cp: opts.Checkpointer, store: opts.Store, log: opts.Logger, threads: map[string]*thread{}, runs: map[string]*run{}, drained: drain.New(nil),
		queues: map[string]*recordQueue{}}
	if opts.MaxRunning > 0 {
		s.slots = make(chan struct{}, opts.MaxRunning)
	}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	if err := s.load(context.Background()); err != nil {
		return nil, err
	}
	s.mux = http.NewServeMux()
	s.routes()
	return s, nil
}

var graphIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`) })

// Serve adds a graph under graphID: its assistant's ID is AssistantID(graphID).
func (s *Server) Serve(graphID string, g Graph) error {
	if !graphIDPattern().MatchString(graphID) {
		return fmt.Errorf("agentserver: graph id %q: use 1 to 64 letters, digits, '_', '.' or '-'", graphID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.assistants {
		if a.graphID == graphID {
			return fmt.Errorf("agentserver: graph %q is served already", graphID)
		}
	}
	s.assistants = append(s.assistants, &assistant{id: AssistantID(graphID), graphID: graphID, g: g, info: g.describe(), created: time.Now().UTC()})
	return nil
}

// AssistantID is the ID of a graph's assistant as LangGraph derives it:
// the UUID version 5 of the graph id in the namespace LangGraph uses,
// 6ba7b821-9dad-11d1-80b4-00c04fd430c8 (so "agent" is
// fe096781-5601-53d2-b2f6-0d3403f7e9ca on every LangGraph server).
func AssistantID(graphID string) string {
	ns := [16]byte{0x6b, 0xa7, 0xb8, 0x21, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
	h := sha1.New()
	h.Write(ns[:])
	h.Write([]byte(graphID))
	var b [16]byte
	copy(b[:], h.Sum(nil))
	b[6] = 0x50 | b[6]&0x0f
	b[8] = 0x80 | b[8]&0x3f
	return formatUUID(b)
}

// assistantFor resolves an assistant id or a graph id.
func (s *Server) assistantFor(id string) (*assistant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.assistants {
		if a.id == id || a.graphID == id {
			return a, nil
		}
	}
	names := make([]string, 0, len(s.assistants))
	for _, a := range s.assistants {
		names = append(names, a.graphID)
	}
	return nil, fmt.Errorf("%w: assistant %q: this server serves %s (by graph id or assistant id)", errNotFound, id, strings.Join(names, ", "))
}

// Shutdown cancels the runs in progress and waits for them to record
// their end, and for the records asked for to be written (or ctx).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.cancel(errShutdown)
	done := make(chan struct{})
	go func() { s.runsWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("agentserver: runs still running at shutdown: %w", ctx.Err())
	}
	if err := s.writesDone(ctx); err != nil {
		return fmt.Errorf("agentserver: records still being written at shutdown: %w", err)
	}
	return nil
}

// Errors the handlers answer with.
var (
	errBadRequest = errors.New("bad request")
	errNotFound   = errors.New("not found")
	errConflict   = errors.New("conflict")
	errShutdown   = errors.New("the server is shutting down")
	errTooMany    = errors.New("too many threads")
	errBusy       = errors.New("the server is busy")
)

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))
}

// errorBody is LangGraph's error document: {"detail": …}.
type errorBody struct {
	Detail string `json:"detail"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Detail: msg})
}

// fail answers with err's status.
func (s *Server) fail(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	var busy *graph.ThreadBusyError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over %d bytes", tooBig.Limit))
	case errors.Is(err, errBadRequest):
		writeError(w, http.StatusUnprocessableEntity, strings.TrimPrefix(err.Error(), errBadRequest.Error()+": "))
	case errors.Is(err, errNotFound), errors.Is(err, graph.ErrCheckpointNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, errConflict), errors.As(err, &busy):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, errTooMany):
		w.Header().Set("Retry-After", "60")
		writeError(w, http.StatusTooManyRequests, err.Error())
	case errors.Is(err, errBusy):
		w.Header().Set("Retry-After", strconv.Itoa(int(s.drained.RetryAfter().Seconds())))
		writeError(w, http.StatusTooManyRequests, err.Error())
	case errors.Is(err, errShutdown):
		w.Header().Set("Retry-After", "10")
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		s.log.Error("request failed", "err", err)
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// decode reads a JSON body: empty is {}; unknown fields are ignored, as
// the clients send fields of newer API versions.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return err
		case errors.Is(err, errEOF):
			return nil
		}
		return badRequest("the body is not the JSON this endpoint takes: %v", err)
	}
	if dec.More() {
		return badRequest("the body holds more than one JSON document")
	}
	return nil
}

// formatUUID writes b in the 8-4-4-4-12 form.
func formatUUID(b [16]byte) string {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[c>>4], hex[c&0x0f])
	}
	return string(out)
}

var uuidPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
})

// validUUID reports whether id is a UUID, as thread and run ids must be.
func validUUID(id string) bool { return uuidPattern().MatchString(id) }

// containsAll reports whether md has every key of want with an equal value.
func containsAll(md, want Metadata) bool {
	for k, v := range want {
		got, ok := md[k]
		if !ok || !jsonEqual(got, v) {
			return false
		}
	}
	return true
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func jsonString(s string) json.RawMessage {
	data, _ := json.Marshal(s)
	return data
}

func cloneMetadata(m Metadata) Metadata {
	out := Metadata{}
	for k, v := range m {
		out[k] = slices.Clone(v)
	}
	return out
}
