package agentserver

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deepgraph/deepgraph/graph"
)

// graphUUID returns a UUID of version 7: time-ordered, random below.
func graphUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[6:])
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(time.Now().UnixMilli()))
	copy(b[:6], ms[2:])
	b[6] = 0x70 | b[6]&0x0f
	b[8] = 0x80 | b[8]&0x3f
	return formatUUID(b)
}

// The causes a run's context ends with.
var (
	errCancelled  = errors.New("cancelled by a client")
	errRolledBack = errors.New("rolled back by a client")
	errSuperseded = errors.New("interrupted by a newer run on its thread (multitask_strategy interrupt)")
	errDisconnect = errors.New("the client disconnected (on_disconnect: cancel)")
)

// run is a run of a thread: its request, its status and its event log.
type run struct {
	id        string
	thread    *thread
	asst      *assistant
	created   time.Time
	metadata  Metadata
	strategy  string
	kwargs    json.RawMessage
	spec      runSpec
	modes     []string // the stream modes it records
	log       *eventLog
	prev      *run // the run it waits for (enqueue)
	done      chan struct{}
	ctx       context.Context
	cancel    context.CancelCauseFunc
	unlink    func() bool // stops the server's end from cancelling ctx
	completed string      // on_completion: delete removes a stateless thread

	// Guarded by the server's mu.
	status  string
	updated time.Time
	end     runEnd
}

func (r *run) stop(cause error) { r.cancel(cause) }

// runOf is a run's record: as the API shows it, and as a Store keeps it.
func (s *Server) runOf(r *run) RunRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := RunRecord{ID: r.id, ThreadID: r.thread.id, AssistantID: r.asst.id, CreatedAt: r.created, UpdatedAt: r.updated,
		Status: r.status, Metadata: cloneMetadata(r.metadata), MultitaskStrategy: r.strategy, Kwargs: r.kwargs}
	switch {
	case r.status == runError && r.end.err != nil:
		rec.Error = r.end.err.Error()
	case r.status == runInterrupted && errors.Is(context.Cause(r.ctx), errShutdown):
		rec.Error = stoppedByShutdown
	}
	return rec
}

// streamModes reads stream_mode: a mode or a list of them (default values).
func streamModes(raw json.RawMessage) ([]string, error) {
	var modes []string
	if len(raw) > 0 && string(raw) != "null" {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			modes = []string{one}
		} else if err := json.Unmarshal(raw, &modes); err != nil {
			return nil, badRequest("stream_mode: a mode or a list of modes")
		}
	}
	if len(modes) == 0 {
		modes = []string{modeValues}
	}
	var out []string
	for _, m := range modes {
		switch m {
		case "messages-tuple", "messages":
			m = modeMessages
		case modeValues, modeUpdates, modeCustom, modeTasks, modeCheckpoints, modeDebug:
		case "events":
			return nil, badRequest("stream_mode events (LangChain's astream_events) is not served: use messages-tuple, updates or custom")
		default:
			return nil, badRequest("stream_mode %q: use values, updates, messages-tuple, custom, tasks, checkpoints or debug", m)
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out, nil
}

// nodeList reads interrupt_before/after: "*" or a list of node names.
func nodeList(raw json.RawMessage, what string) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one != graph.AllNodes {
			return nil, badRequest(`%s: "*" or a list of node names`, what)
		}
		return []string{graph.AllNodes}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest(`%s: "*" or a list of node names`, what)
	}
	return list, nil
}

// newRun validates a run request and queues the run on its thread (a new
// stateless thread when threadID is "").
func (s *Server) newRun(r *http.Request, threadID string) (*run, error) {
	var req runCreate
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	kwargs, _ := json.Marshal(req)
	if req.AssistantID == "" {
		return nil, badRequest("assistant_id is required: a graph id or an assistant id (POST /assistants/search lists them)")
	}
	asst, err := s.assistantFor(req.AssistantID)
	if err != nil {
		return nil, err
	}
	modes, err := streamModes(req.StreamMode)
	if err != nil {
		return nil, err
	}
	strategy := req.MultitaskStrategy
	switch strategy {
	case "":
		strategy = "reject"
	case "reject", "enqueue", "interrupt", "rollback":
	default:
		return nil, badRequest("multitask_strategy %q: use reject, enqueue, interrupt or rollback", strategy)
	}
	switch req.OnDisconnect {
	case "", "cancel", "continue":
	default:
		return nil, badRequest("on_disconnect %q: use cancel or continue", req.OnDisconnect)
	}
	durability, ok := durabilities[req.Durability]
	if !ok {
		return nil, badRequest("durability %q: use sync, async or exit", req.Durability)
	}
	spec := runSpec{input: req.Input, command: req.Command, checkpointID: req.CheckpointID, durability: durability, subgraphs: req.StreamSubgraphs,
		config: RunConfig{Configurable: map[string]json.RawMessage{}, GraphID: asst.graphID, AssistantID: asst.id}}
	if req.Command != nil && len(req.Command.Resume) == 0 && len(req.Command.Update) == 0 && len(req.Command.Goto) == 0 {
		spec.command = nil
	}
	if spec.command != nil {
		spec.input = nil // the command wins over an empty input (Agent Chat UI sends both)
	}
	if req.Checkpoint != nil && req.Checkpoint.CheckpointID != "" {
		spec.checkpointID = req.Checkpoint.CheckpointID
	}
	if spec.interruptBefore, err = nodeList(req.InterruptBefore, "interrupt_before"); err != nil {
		return nil, err
	}
	if spec.interruptAfter, err = nodeList(req.InterruptAfter, "interrupt_after"); err != nil {
		return nil, err
	}
	if req.Config != nil {
		spec.recursionLimit = req.Config.RecursionLimit
		for k, v := range req.Config.Configurable {
			spec.config.Configurable[k] = v
		}
	}
	for k, v := range req.Context {
		spec.config.Configurable[k] = v
	}
	// Request headers reach the configuration as LangGraph passes them:
	// x-* (but credentials) and user-agent.
	for k, v := range r.Header {
		lk := strings.ToLower(k)
		if (strings.HasPrefix(lk, "x-") && lk != "x-api-key" && lk != "x-tenant-id" && lk != "x-service-key" && lk != "x-auth-scheme") || lk == "user-agent" {
			spec.config.Configurable[lk] = jsonString(strings.Join(v, ", "))
		}
	}

	// A place among the runs the server takes (MaxRunning, MaxQueued),
	// given back if the run does not start.
	if err := s.admit(); err != nil {
		return nil, err
	}
	admitted := false
	defer func() {
		if !admitted {
			s.release()
		}
	}()

	var t *thread
	if threadID == "" {
		if t, err = s.newThread("", nil, "", true); err != nil {
			return nil, err
		}
	} else if t, err = s.thread(threadID); err != nil {
		if req.IfNotExists != "create" || !errors.Is(err, errNotFound) {
			return nil, err
		}
		if t, err = s.newThread(threadID, nil, "do_nothing", false); err != nil {
			return nil, err
		}
	}
	if req.OnCompletion == "" && t.stateless {
		req.OnCompletion = "delete"
	}
	// A run without input or command continues the thread's pending tasks:
	// refused at once when they wait for answers. (On a busy thread the
	// run decides when it starts: the runs before it change the state.)
	s.mu.Lock()
	sameGraph := t.graphID == "" || t.graphID == asst.graphID
	s.mu.Unlock()
	if spec.command == nil && isNull(spec.input) && spec.checkpointID == "" && sameGraph && !s.busy(t) {
		_, waiting, err := asst.g.pending(r.Context(), t.id)
		if err != nil {
			return nil, fmt.Errorf("reading the pending tasks of thread %s: %w", t.id, err)
		}
		if len(waiting) > 0 {
			return nil, fmt.Errorf("%w: %w", errBadRequest, errWaiting(waiting))
		}
	}

	now := time.Now().UTC()
	md := req.Metadata
	if md == nil {
		md = Metadata{}
	}
	ru := &run{id: graphUUID(), thread: t, asst: asst, created: now, updated: now, metadata: cloneMetadata(md), strategy: strategy,
		kwargs: kwargs, spec: spec, modes: modes, log: newEventLog(), done: make(chan struct{}), status: runPending, completed: req.OnCompletion}
	ru.spec.thread, ru.spec.runID, ru.spec.modes = t.id, ru.id, modes
	ru.spec.config.ThreadID, ru.spec.config.RunID = t.id, ru.id
	// The run's context ends with the server's; it carries the values of
	// the request that created it (its trace span, say), not its end.
	ru.ctx, ru.cancel = context.WithCancelCause(context.WithoutCancel(r.Context()))
	ru.unlink = context.AfterFunc(s.ctx, func() { ru.cancel(context.Cause(s.ctx)) })

	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil, errShutdown
	}
	if t.graphID != "" && t.graphID != asst.graphID {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: thread %s holds a state of graph %q, not of %q: use a new thread", errConflict, t.id, t.graphID, asst.graphID)
	}
	var active []*run
	for _, o := range t.runs {
		if o.status == runPending || o.status == runRunning {
			active = append(active, o)
		}
	}
	if len(active) > 0 && strategy == "reject" {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: thread %s is already running a task (run %s); send multitask_strategy enqueue, interrupt or rollback, or cancel it",
			errConflict, t.id, active[0].id)
	}
	if len(t.runs) > 0 {
		ru.prev = t.runs[len(t.runs)-1]
	}
	// The thread's metadata names its graph, as LangGraph stamps it on the
	// first run (Agent Chat UI lists threads by it).
	t.graphID = asst.graphID
	if _, ok := t.metadata["graph_id"]; !ok {
		t.metadata["graph_id"] = jsonString(asst.graphID)
	}
	if _, ok := t.metadata["assistant_id"]; !ok {
		t.metadata["assistant_id"] = jsonString(asst.id)
	}
	t.updated = now
	t.runs = append(t.runs, ru)
	s.runs[ru.id] = ru
	s.runsWG.Add(1)
	s.mu.Unlock()

	switch strategy {
	case "interrupt":
		for _, o := range active {
			o.stop(errSuperseded)
		}
	case "rollback":
		for _, o := range active {
			o.stop(errRolledBack)
		}
	}
	ru.log.add("metadata", map[string]any{"run_id": ru.id, "thread_id": t.id, "attempt": 1})
	s.saveRun(ru, false)
	admitted = true
	go s.execute(ru)
	return ru, nil
}

// admit takes a place for a run among those the server takes.
func (s *Server) admit() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opts.MaxRunning > 0 && s.admitted >= s.opts.MaxRunning+s.opts.MaxQueued {
		return fmt.Errorf("%w: its limit of %d running and %d waiting runs is reached: try again later",
			errBusy, s.opts.MaxRunning, s.opts.MaxQueued)
	}
	s.admitted++
	return nil
}

// release gives back a run's place.
func (s *Server) release() {
	s.mu.Lock()
	s.admitted--
	s.mu.Unlock()
	s.drained.Ended()
}

// execute runs a run once the runs before it on its thread have ended
// and one of the server's MaxRunning slots is free.
func (s *Server) execute(ru *run) {
	defer s.runsWG.Done()
	defer ru.unlink()
	defer close(ru.done)
	defer ru.log.close()
	defer s.release() // before the stream ends: a client may run again at once
	if ru.prev != nil {
		select {
		case <-ru.prev.done:
		case <-ru.ctx.Done():
		}
	}
	if s.slots != nil && ru.ctx.Err() == nil {
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		case <-ru.ctx.Done():
		}
	}
	if s.ctx.Err() != nil {
		// The server's end reaches the run's context in a goroutine of
		// its own (AfterFunc): a run the shutdown found waiting must not
		// start in between — it stays pending for the next server.
		ru.cancel(context.Cause(s.ctx))
	}
	started := ru.ctx.Err() == nil
	if started {
		s.setStatus(ru, runRunning)
		end := ru.asst.g.run(ru.ctx, ru.spec, func(ev streamEvent) { s.record(ru, ev) })
		s.mu.Lock()
		ru.end = end
		s.mu.Unlock()
	}
	cause := context.Cause(ru.ctx)
	status, tstatus := statusOf(cause, ru.end)
	if !started && errors.Is(cause, errShutdown) {
		status = runPending // for the next server (ResumeRuns)
	}
	switch {
	case errors.Is(cause, errRolledBack):
		// The run is undone: its checkpoints and its record go.
		if _, err := s.cp.Prune(context.WithoutCancel(ru.ctx), ru.thread.id, graph.Prune{Run: ru.id}); err != nil {
			s.log.Warn("could not roll a run back", "run", ru.id, "err", err)
		}
	case cause == nil && ru.end.err != nil:
		ru.log.add("error", map[string]string{"error": errorName(ru.end), "message": ru.end.err.Error()})
		s.log.Warn("a run failed", "run", ru.id, "graph", ru.asst.graphID, "err", ru.end.err)
	}
	if ru.end.err != nil && ru.ctx.Err() != nil && !errors.Is(cause, errRolledBack) {
		ru.log.add("error", map[string]string{"error": "CancelledError", "message": cause.Error()})
	}
	s.mu.Lock()
	ru.status, ru.updated = status, time.Now().UTC()
	t := ru.thread
	if cause == nil || !errors.Is(cause, errRolledBack) {
		t.status = tstatus
	}
	rolledBack := errors.Is(cause, errRolledBack)
	if rolledBack {
		delete(s.runs, ru.id)
		t.runs = slices.DeleteFunc(t.runs, func(o *run) bool { return o == ru })
	}
	t.updated, t.stateUpdated = ru.updated, ru.updated
	deleteThread := t.stateless && ru.completed == "delete"
	s.mu.Unlock()
	if rolledBack {
		if err := s.unstore(context.Background(), t.id, s.store.DeleteRun, ru.id); err != nil {
			s.log.Warn("could not delete a rolled back run's record", "run", ru.id, "err", err)
		}
		s.saveThread(t)
	} else {
		s.saveRun(ru, true) // its end is kept when done closes
	}
	if deleteThread {
		s.runsWG.Add(1)
		go func() { // after this run's done closes: removeThread waits for it
			defer s.runsWG.Done()
			if err := s.removeThread(context.Background(), t); err != nil {
				s.log.Warn("could not delete a stateless run's thread", "thread", t.id, "err", err)
			}
		}()
	}
}

// statusOf is how a run ended, for the run and for its thread: cause is
// why its context ended (nil: it did not), end what its graph returned.
func statusOf(cause error, end runEnd) (run, thread string) {
	switch {
	case cause != nil:
		return runInterrupted, threadIdle
	case end.err != nil:
		return runError, threadError
	case len(end.interrupts) > 0:
		return runInterrupted, threadInterrupted
	}
	return runSuccess, threadIdle
}

func errorName(end runEnd) string {
	if end.bad {
		return "ValueError"
	}
	var ne *graph.NodeError
	if errors.As(end.err, &ne) {
		return "NodeError"
	}
	return "RunError"
}

func (s *Server) setStatus(ru *run, status string) {
	s.mu.Lock()
	ru.status, ru.updated = status, time.Now().UTC()
	s.mu.Unlock()
	s.saveRun(ru, false)
}

// busy reports whether a thread has a run pending or running.
func (s *Server) busy(t *thread) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.statusLocked() == threadBusy
}

// record adds an event of the run to its log when the run records its mode.
func (s *Server) record(ru *run, ev streamEvent) {
	switch {
	case ev.mode == modeCheckpoints:
		if !slices.Contains(ru.modes, modeCheckpoints) && !slices.Contains(ru.modes, modeDebug) {
			return
		}
		// A subgraph's checkpoint comes described (stream_subgraphs); the
		// run's own is read from the thread when it is its newest.
		cp, ok := ev.data.(checkpointEvent)
		if !ok {
			own, described := ev.data.(ownCheckpoint)
			st, err := ru.asst.g.state(ru.ctx, graph.Thread(ru.thread.id))
			switch {
			case described && (err != nil || st.Checkpoint.CheckpointID != own.Config.Configurable.CheckpointID):
				cp = own.checkpointEvent
			case err != nil:
				return
			default:
				cp = checkpointEvent{Values: st.Values, Next: st.Next, Metadata: st.Metadata, Tasks: st.Tasks,
					Config: configOf(st.Checkpoint), ParentConfig: nil}
				if st.ParentCheckpoint != nil {
					pc := configOf(*st.ParentCheckpoint)
					cp.ParentConfig = &pc
				}
			}
		}
		if slices.Contains(ru.modes, modeCheckpoints) {
			ru.log.add(ev.name(modeCheckpoints), cp)
		}
		if slices.Contains(ru.modes, modeDebug) {
			ru.log.add(ev.name(modeDebug), debugEvent{Type: "checkpoint", Step: ev.step, Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Payload: cp})
		}
		return
	case ev.mode == modeTasks && slices.Contains(ru.modes, modeDebug):
		typ := "task"
		if _, ok := ev.data.(taskEnd); ok {
			typ = "task_result"
		}
		ru.log.add(ev.name(modeDebug), debugEvent{Type: typ, Step: ev.step, Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Payload: ev.data})
	}
	if slices.Contains(ru.modes, ev.mode) {
		ru.log.add(ev.name(ev.mode), ev.data)
	}
}

type runnableConfig struct {
	Configurable checkpointRef `json:"configurable"`
}

func configOf(c checkpointRef) runnableConfig { return runnableConfig{Configurable: c} }

type checkpointEvent struct {
	Values       json.RawMessage `json:"values"`
	Next         []string        `json:"next"`
	Config       runnableConfig  `json:"config"`
	ParentConfig *runnableConfig `json:"parent_config"`
	Metadata     checkpointMeta  `json:"metadata"`
	Tasks        []stateTask     `json:"tasks"`
}

type debugEvent struct {
	Type      string `json:"type"`
	Step      int    `json:"step"`
	Timestamp string `json:"timestamp"`
	Payload   any    `json:"payload"`
}

// location is the path of a run, for Content-Location.
func location(ru *run) string {
	if ru.thread.stateless {
		return "/runs/" + ru.id
	}
	return "/threads/" + ru.thread.id + "/runs/" + ru.id
}

func (s *Server) runCreate(w http.ResponseWriter, r *http.Request) {
	ru, err := s.newRun(r, r.PathValue("thread_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Location", location(ru))
	writeJSON(w, http.StatusOK, s.runOf(ru))
}

func (s *Server) runStream(w http.ResponseWriter, r *http.Request) {
	ru, err := s.newRun(r, r.PathValue("thread_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	var req struct {
		OnDisconnect string `json:"on_disconnect"`
	}
	_ = json.Unmarshal(ru.kwargs, &req)
	w.Header().Set("Content-Location", location(ru))
	w.Header().Set("Location", location(ru)+"/stream")
	completed := s.sse(w, r, ru, 0, nil)
	if !completed && req.OnDisconnect != "continue" {
		ru.stop(errDisconnect)
	}
}

func (s *Server) runWait(w http.ResponseWriter, r *http.Request) {
	ru, err := s.newRun(r, r.PathValue("thread_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Location", location(ru))
	s.wait(w, r, ru)
}

// wait answers with the run's final values once it ends.
func (s *Server) wait(w http.ResponseWriter, r *http.Request, ru *run) {
	select {
	case <-ru.done:
	case <-r.Context().Done():
		return
	}
	s.mu.Lock()
	end, status := ru.end, ru.status
	s.mu.Unlock()
	if end.err != nil && status == runError {
		writeJSON(w, http.StatusOK, map[string]string{"__error__": end.err.Error()})
		return
	}
	values := end.values
	if len(values) == 0 && ru.log.restored() {
		// A run an earlier server ran: its values are in its checkpoints,
		// as LangGraph's join answers a run whose stream is gone.
		v, intr, err := s.outcome(r.Context(), ru)
		if err != nil {
			s.fail(w, fmt.Errorf("reading the outcome of run %s: %w", ru.id, err))
			return
		}
		values = withInterruptsIf(v, intr)
	}
	if len(values) == 0 {
		values = json.RawMessage("{}")
	}
	writeJSON(w, http.StatusOK, values)
}

// withInterruptsIf is values with __interrupt__ when intr has any.
func withInterruptsIf(values json.RawMessage, intr []interruptOut) json.RawMessage {
	if len(intr) == 0 {
		return values
	}
	return withInterrupts(values, intr)
}

// outcome reads the values a run ended with, and the interrupts it
// stopped at, from the thread's checkpoints: its last checkpoint, as
// stored (the state of the live stream's last values event) — or, when
// it wrote none, the thread's newest (LangGraph's join answers the
// thread's values). A thread without a checkpoint has none (nil).
func (s *Server) outcome(ctx context.Context, ru *run) (json.RawMessage, []interruptOut, error) {
	a, err := s.assistantFor(ru.asst.id)
	if err != nil {
		return nil, nil, err
	}
	at := graph.Thread(ru.thread.id)
	hist, err := a.g.history(ctx, at, 1) // the newest: most often the run's
	if err == nil && len(hist) > 0 && hist[0].Metadata.RunID != ru.id {
		hist, err = a.g.history(ctx, at, 0)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(hist) == 0 {
		return nil, nil, nil
	}
	for _, h := range hist { // newest first
		if h.Metadata.RunID == ru.id {
			return h.Values, h.Interrupts, nil
		}
	}
	return hist[0].Values, hist[0].Interrupts, nil
}

// restoredStream rebuilds the stream of a run an earlier server ran,
// whose events went with that server: a client joining it gets at once
// what is left of it — its metadata, the values it ended with (with the
// interrupts it stopped at) and, when it failed, its error — and its end,
// rather than an empty stream. It is built once per run.
func (s *Server) restoredStream(ctx context.Context, ru *run) {
	values, intr, err := s.outcome(ctx, ru)
	evs := []eventOut{{"metadata", map[string]any{"run_id": ru.id, "thread_id": ru.thread.id, "attempt": 1}}}
	switch {
	case err != nil:
		evs = append(evs, eventOut{"error", map[string]string{"error": "RunError", "message": fmt.Sprintf("the events of run %s went with the server that ran it, and its outcome cannot be read: %v", ru.id, err)}})
	case values != nil:
		evs = append(evs, eventOut{modeValues, withInterruptsIf(values, intr)})
	}
	s.mu.Lock()
	status, end := ru.status, ru.end
	s.mu.Unlock()
	if err == nil && status == runError && end.err != nil {
		evs = append(evs, eventOut{"error", map[string]string{"error": errorName(end), "message": end.err.Error()}})
	}
	ru.log.rebuild(evs)
}

// eventOut is an event to add to a log.
type eventOut struct {
	event string
	data  any
}

// runOfPath reads the run a path names, checking its thread.
func (s *Server) runOfPath(r *http.Request) (*run, error) {
	id, tid := r.PathValue("run_id"), r.PathValue("thread_id")
	s.mu.Lock()
	ru, ok := s.runs[id]
	s.mu.Unlock()
	if !ok || (tid != "" && ru.thread.id != tid) {
		return nil, fmt.Errorf("%w: run %s", errNotFound, id)
	}
	return ru, nil
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	ru, err := s.runOfPath(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.runOf(ru))
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	t, err := s.thread(r.PathValue("thread_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	s.mu.Lock()
	runs := slices.Clone(t.runs)
	s.mu.Unlock()
	status := r.URL.Query().Get("status")
	out := []RunRecord{}
	for i := len(runs) - 1; i >= 0; i-- { // newest first
		o := s.runOf(runs[i])
		if status == "" || o.Status == status {
			out = append(out, o)
		}
	}
	limit, offset := atoiOr(r.URL.Query().Get("limit"), 10), atoiOr(r.URL.Query().Get("offset"), 0)
	writeJSON(w, http.StatusOK, page(out, limit, offset, 10, w))
}

func atoiOr(s string, def int) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		return def
	}
	return n
}

func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request) {
	ru, err := s.runOfPath(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	select {
	case <-ru.done:
	default:
		s.fail(w, fmt.Errorf("%w: run %s is in progress: cancel it first", errConflict, ru.id))
		return
	}
	s.mu.Lock()
	delete(s.runs, ru.id)
	ru.thread.runs = slices.DeleteFunc(ru.thread.runs, func(o *run) bool { return o == ru })
	s.mu.Unlock()
	if err := s.unstore(r.Context(), ru.thread.id, s.store.DeleteRun, ru.id); err != nil {
		s.fail(w, fmt.Errorf("deleting run %s's record: %w", ru.id, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) joinRun(w http.ResponseWriter, r *http.Request) {
	ru, err := s.runOfPath(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.wait(w, r, ru)
}

func (s *Server) joinStream(w http.ResponseWriter, r *http.Request) {
	ru, err := s.runOfPath(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	after := int64(0)
	if v := r.Header.Get("Last-Event-ID"); v != "" && v != "-1" {
		if _, err := fmt.Sscan(v, &after); err != nil || after < 0 {
			s.fail(w, badRequest("Last-Event-ID %q is not an event id of this run", v))
			return
		}
	}
	if ru.log.restored() {
		// Its events went with the server that ran it; what is left of it
		// is sent whole (the ids a client saw were the lost stream's).
		s.restoredStream(r.Context(), ru)
		after = 0
	}
	var only []string
	if q := r.URL.Query()["stream_mode"]; len(q) > 0 {
		for _, m := range q {
			if m == "messages-tuple" {
				m = modeMessages
			}
			only = append(only, m)
		}
	}
	w.Header().Set("Location", location(ru)+"/stream")
	completed := s.sse(w, r, ru, after, only)
	if !completed && r.URL.Query().Get("cancel_on_disconnect") == "1" {
		ru.stop(errDisconnect)
	}
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	ru, err := s.runOfPath(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	cause := errCancelled
	switch a := r.URL.Query().Get("action"); a {
	case "", "interrupt":
	case "rollback":
		cause = errRolledBack
	default:
		s.fail(w, badRequest("action %q: use interrupt or rollback", a))
		return
	}
	select {
	case <-ru.done:
		s.fail(w, fmt.Errorf("%w: run %s has ended: there is nothing to cancel", errConflict, ru.id))
		return
	default:
	}
	ru.stop(cause)
	if w1 := r.URL.Query().Get("wait"); w1 == "1" || w1 == "true" {
		select {
		case <-ru.done:
		case <-r.Context().Done():
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// eventLog is a run's stream, kept in memory for the streams that join it.
type eventLog struct {
	mu      sync.Mutex
	events  []sseEvent
	changed chan struct{}
	closed  bool
	rebuilt bool // restored: its events rebuilt from the run's checkpoints
}

type sseEvent struct {
	id    int64
	event string
	data  []byte
}

func newEventLog() *eventLog { return &eventLog{changed: make(chan struct{})} }

func (l *eventLog) add(event string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		event = "error"
		data, _ = json.Marshal(map[string]string{"error": "EncodingError", "message": "a " + event + " event could not be encoded: " + err.Error()})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.events = append(l.events, sseEvent{id: int64(len(l.events) + 1), event: event, data: data})
	close(l.changed)
	l.changed = make(chan struct{})
}

// restored reports whether the log is of a run an earlier server ran,
// read back from the store: closed without even the metadata event every
// run's log begins with, or rebuilt since.
func (l *eventLog) restored() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed && (len(l.events) == 0 || l.rebuilt)
}

// rebuild fills a restored log, which is closed, with evs — once: a
// log rebuilt or never lost stays as it is.
func (l *eventLog) rebuild(evs []eventOut) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed || len(l.events) > 0 {
		return
	}
	for _, e := range evs {
		data, err := json.Marshal(e.data)
		if err != nil {
			continue
		}
		l.events = append(l.events, sseEvent{id: int64(len(l.events) + 1), event: e.event, data: data})
	}
	l.rebuilt = true
}

func (l *eventLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.changed)
	}
}

// since returns the events after id, a channel closed when there are
// more, and whether the log is closed.
func (l *eventLog) since(after int64) ([]sseEvent, <-chan struct{}, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := int(min(max(after, 0), int64(len(l.events))))
	return l.events[i:len(l.events):len(l.events)], l.changed, l.closed
}

// sse streams a run's events after `after` (only the modes of only, when
// set; metadata and error always), until the run ends or the client goes.
// It reports whether the stream reached the run's end.
func (s *Server) sse(w http.ResponseWriter, r *http.Request, ru *run, after int64, only []string) bool {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "this connection cannot stream")
		return false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	beat := time.NewTicker(s.opts.Heartbeat)
	defer beat.Stop()
	for {
		evs, changed, closed := ru.log.since(after)
		for _, ev := range evs {
			after = ev.id
			mode, _, _ := strings.Cut(ev.event, "|")
			if only != nil && mode != "metadata" && mode != "error" && !slices.Contains(only, mode) {
				continue
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\nid: %d\n\n", ev.event, ev.data, ev.id); err != nil {
				return false
			}
		}
		if len(evs) > 0 {
			flusher.Flush()
		}
		if closed {
			return true
		}
		select {
		case <-r.Context().Done():
			return false
		case <-changed:
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return false
			}
			flusher.Flush()
		}
	}
}
