package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: msg}})
}

// fail answers with the error's status: a bad request, a missing run, the
// queue's refusals; anything else is internal (its text redacted).
func (s *Server) fail(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, codeTooLarge, fmt.Sprintf("the request body is over %d bytes", tooBig.Limit))
	case errors.Is(err, ErrBadRequest):
		writeError(w, http.StatusBadRequest, codeBadRequest, strings.TrimPrefix(err.Error(), ErrBadRequest.Error()+": "))
	case errors.Is(err, runstore.ErrNotFound):
		writeError(w, http.StatusNotFound, codeNotFound, err.Error())
	case errors.Is(err, errBusy):
		writeError(w, http.StatusConflict, codeConflict, err.Error()+": wait for it, answer it or cancel it first")
	case errors.Is(err, errQueueFull):
		after := s.runs.retryAfter()
		w.Header().Set("Retry-After", strconv.Itoa(int(after.Seconds())))
		writeError(w, http.StatusTooManyRequests, codeRateLimited, fmt.Sprintf("%v (%d running, %d waiting): try again in %s",
			err, s.opts.MaxRunning, s.opts.QueueSize, after))
	case errors.Is(err, errDraining):
		w.Header().Set("Retry-After", "10")
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, err.Error())
	default:
		s.log.Error("request failed", "err", err)
		writeError(w, http.StatusInternalServerError, codeInternal, s.opts.Redact(err.Error()))
	}
}

// decode reads a JSON body strictly: unknown fields are refused.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		return badRequest("the body is not the JSON this endpoint takes: %v", err)
	}
	if dec.More() {
		return badRequest("the body holds more than one JSON document")
	}
	return nil
}

// pageOf reads limit and offset.
func pageOf(r *http.Request) (limit, offset int, err error) {
	limit, offset = 20, 0
	q := r.URL.Query()
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 100 {
			return 0, 0, badRequest("limit %q: use a whole number from 1 to 100", v)
		}
	}
	if v := q.Get("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			return 0, 0, badRequest("offset %q: use a whole number from 0", v)
		}
	}
	return limit, offset, nil
}

// nextPage cuts a page read with one item more than limit (to learn
// whether another page follows) and returns the next page's offset, nil at
// the end.
func nextPage[T any](items []T, limit, offset int) ([]T, *int) {
	if len(items) > limit {
		return items[:limit], new(offset + limit)
	}
	return items, nil
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	running, waiting, _ := s.runs.counts()
	writeJSON(w, http.StatusOK, Health{Status: "ok", Running: running, Queued: waiting})
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.choices())
}

// choices is what a run may choose on this server, with its version.
func (s *Server) choices() Info {
	c := s.eng.Choices()
	info := Info{Version: s.opts.Version, Auth: s.opts.Token != "", Kinds: c.Kinds, Efforts: c.Efforts, DefaultEffort: c.DefaultEffort,
		Backends: c.Backends, DefaultBackend: c.DefaultBackend, Models: c.Models, MaxQuestion: s.opts.MaxQuestion}
	for _, l := range []*[]string{&info.Backends, &info.Models} {
		if *l == nil {
			*l = []string{}
		}
	}
	return info
}

func (s *Server) createThread(w http.ResponseWriter, r *http.Request) {
	if err := decode(r, &CreateThread{}); err != nil {
		s.fail(w, err)
		return
	}
	now := time.Now().UTC()
	t := &runstore.Thread{ID: runstore.NewID(), Created: now, Updated: now}
	if err := s.store.Runs.CreateThread(r.Context(), t); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, threadOf(t, nil))
}

// threadOf is a stored thread with the status of its newest run.
func threadOf(t *runstore.Thread, newest *runstore.Run) Thread {
	out := Thread{ID: t.ID, Kind: t.Kind, Title: t.Title, Status: ThreadIdle, Created: t.Created, Updated: t.Updated, RunCount: t.Runs}
	if newest != nil {
		switch newest.Effective(time.Now(), runstore.Alive) {
		case runstore.StatusQueued, runstore.StatusRunning:
			out.Status = ThreadBusy
		case runstore.StatusNeedsInput:
			out.Status = ThreadNeedsInput
		case runstore.StatusInterrupted:
			out.Status = ThreadInterrupted
		case runstore.StatusFailed:
			out.Status = ThreadFailed
		}
	}
	return out
}

// thread reads a thread and its runs, oldest first.
func (s *Server) thread(ctx context.Context, id string) (*runstore.Thread, []*runstore.Run, error) {
	t, err := s.store.Runs.GetThread(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("thread %s: %w", id, err)
	}
	runs, err := s.store.Runs.ThreadRuns(ctx, id)
	return t, runs, err
}

func newest(runs []*runstore.Run) *runstore.Run {
	if len(runs) == 0 {
		return nil
	}
	return runs[len(runs)-1]
}

func (s *Server) listThreads(w http.ResponseWriter, r *http.Request) {
	limit, offset, err := pageOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	ts, err := s.store.Runs.ListThreads(r.Context(), runstore.ThreadListOptions{Limit: limit + 1, Offset: offset})
	if err != nil {
		s.fail(w, err)
		return
	}
	out := ThreadList{Threads: []Thread{}}
	ts, out.NextOffset = nextPage(ts, limit, offset)
	for _, t := range ts {
		runs, err := s.store.Runs.ThreadRuns(r.Context(), t.ID)
		if err != nil {
			s.fail(w, err)
			return
		}
		out.Threads = append(out.Threads, threadOf(t, newest(runs)))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getThread(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t, runs, err := s.thread(ctx, r.PathValue("thread_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	out := ThreadDetail{Thread: threadOf(t, newest(runs)), Values: json.RawMessage("null"), Runs: []Run{}}
	cp, err := s.store.Checkpointer.Get(ctx, graph.Thread(t.ID))
	switch {
	case err == nil:
		if out.Values, err = cp.StateJSON(); err != nil {
			s.fail(w, err)
			return
		}
	case !errors.Is(err, graph.ErrCheckpointNotFound):
		s.fail(w, err)
		return
	}
	for _, run := range runs {
		out.Runs = append(out.Runs, s.runOf(ctx, run, false))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) deleteThread(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t, runs, err := s.thread(ctx, r.PathValue("thread_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	for _, run := range runs {
		if st := run.Effective(time.Now(), runstore.Alive); st == runstore.StatusRunning || st == runstore.StatusQueued {
			writeError(w, http.StatusConflict, codeConflict, fmt.Sprintf("run %s of the thread is %s: cancel it first", run.ID, st))
			return
		}
	}
	if err := s.store.Runs.DeleteThread(ctx, t.ID); err != nil {
		s.fail(w, err)
		return
	}
	if err := s.store.Checkpointer.DeleteThread(ctx, t.ID); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	limit, _, err := pageOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	if r.URL.Query().Get("limit") == "" {
		limit = 50
	}
	t, _, err := s.thread(ctx, r.PathValue("thread_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	cps, err := s.store.Checkpointer.List(ctx, graph.Thread(t.ID), limit)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := History{Checkpoints: []Checkpoint{}}
	for _, cp := range cps {
		c := Checkpoint{ID: cp.ID, Parent: cp.Parent, Step: cp.Step, RunID: cp.Run, Source: string(cp.Source), Created: cp.Created,
			Next: []string{}, Ran: []string{}}
		for _, n := range cp.Next {
			c.Next = append(c.Next, n.Node)
		}
		c.Ran = append(c.Ran, cp.Ran...)
		out.Checkpoints = append(out.Checkpoints, c)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createRun(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var req RunRequest
	if err := decode(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	if req.Kind == "" {
		req.Kind = runstore.KindResearch
	}
	req.Input = strings.TrimSpace(req.Input)
	switch {
	case req.Kind != runstore.KindResearch && req.Kind != runstore.KindAgent:
		s.fail(w, badRequest("kind %q: use research or agent", req.Kind))
		return
	case req.Input == "":
		s.fail(w, badRequest("input is empty: give the question (or the agent's task)"))
		return
	case !utf8.ValidString(req.Input):
		s.fail(w, badRequest("input is not valid UTF-8"))
		return
	case utf8.RuneCountInString(req.Input) > s.opts.MaxQuestion:
		writeError(w, http.StatusRequestEntityTooLarge, codeTooLarge, fmt.Sprintf("input has %d characters; this server takes at most %d",
			utf8.RuneCountInString(req.Input), s.opts.MaxQuestion))
		return
	}
	t, runs, err := s.thread(ctx, r.PathValue("thread_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	if last := newest(runs); last != nil {
		switch {
		case t.Kind == runstore.KindAgent || req.Kind == runstore.KindAgent:
			writeError(w, http.StatusConflict, codeConflict, fmt.Sprintf("thread %s already has a run, and an agent run needs a thread of its own: create a new thread", t.ID))
			return
		case last.Effective(time.Now(), runstore.Alive) == runstore.StatusNeedsInput:
			writeError(w, http.StatusConflict, codeConflict, fmt.Sprintf("run %s of the thread waits for an answer: answer it (resume) or cancel it first", last.ID))
			return
		}
	}
	set, err := s.eng.Settings(req)
	if err != nil {
		s.fail(w, err)
		return
	}
	settings, err := json.Marshal(set)
	if err != nil {
		s.fail(w, err)
		return
	}
	now := time.Now().UTC()
	run := &runstore.Run{ID: runstore.NewID(), Thread: t.ID, Kind: req.Kind, Question: req.Input, Status: runstore.StatusQueued,
		Started: now, Updated: now, Settings: settings}
	// add refuses a second run on a thread with one in progress here.
	err = s.runs.add(ctx, run, nil, func(run *runstore.Run) error { return s.store.Runs.Create(ctx, run) })
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, s.runOf(ctx, run, false))
}

// runOf is a stored run as the API shows it; with the report when full.
func (s *Server) runOf(ctx context.Context, run *runstore.Run, full bool) Run {
	now := time.Now()
	status := run.Effective(now, runstore.Alive)
	out := Run{ID: run.ID, ThreadID: run.Thread, Kind: run.Kind, Input: run.Question, Status: status, Created: run.Started,
		Updated: run.Updated, Error: run.Error, Tokens: run.Tokens, Calls: run.Calls,
		DurationMS: run.Duration(now, runstore.Alive).Milliseconds(), Settings: RunSettings{Models: map[string]string{}}}
	if !run.Ended.IsZero() {
		e := run.Ended
		out.Ended = &e
	}
	if run.Cost != nil {
		usd := *run.Cost
		out.CostUSD = &usd
	}
	if run.Updated.IsZero() {
		out.Updated = run.Started
	}
	if set, err := app.SettingsOf(run); err == nil {
		out.Settings = RunSettings{Effort: set.Effort, Backend: set.Backend, Models: set.Models, Queries: set.Queries, Loops: set.Loops, Review: set.Review}
		if out.Settings.Models == nil {
			out.Settings.Models = map[string]string{}
		}
	}
	if status == runstore.StatusNeedsInput {
		if ev, err := s.store.Runs.LastEvent(ctx, run.ID, EventInterrupt); err == nil {
			var intr Interrupt
			if json.Unmarshal(ev.Data, &intr) == nil {
				out.Interrupt = &intr
			}
		}
	}
	if full && len(run.Report) > 0 {
		out.Report = run.Report
	}
	return out
}

// run reads the run of a path, checking that it is the thread's.
func (s *Server) run(r *http.Request) (*runstore.Run, error) {
	thread, id := r.PathValue("thread_id"), r.PathValue("run_id")
	run, err := s.store.Runs.Get(r.Context(), id)
	if err == nil && (run.ID != id || run.Thread != thread) {
		err = runstore.ErrNotFound
	}
	if err != nil {
		if errors.Is(err, runstore.ErrNotFound) || errors.Is(err, runstore.ErrAmbiguous) {
			return nil, fmt.Errorf("%w: thread %s has no run %s", runstore.ErrNotFound, thread, id)
		}
		return nil, err
	}
	return run, nil
}

func (s *Server) threadRuns(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	_, runs, err := s.thread(ctx, r.PathValue("thread_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	out := RunList{Runs: []Run{}}
	for _, run := range runs {
		out.Runs = append(out.Runs, s.runOf(ctx, run, false))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	limit, offset, err := pageOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	runs, err := s.store.Runs.List(ctx, runstore.ListOptions{Limit: limit + 1, Offset: offset})
	if err != nil {
		s.fail(w, err)
		return
	}
	out := RunList{Runs: []Run{}}
	runs, out.NextOffset = nextPage(runs, limit, offset)
	for _, run := range runs {
		out.Runs = append(out.Runs, s.runOf(ctx, run, false))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.runOf(r.Context(), run, true))
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	run, err := s.run(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	switch status := run.Effective(time.Now(), runstore.Alive); status {
	case runstore.StatusQueued, runstore.StatusRunning:
		if !s.runs.cancel(ctx, run.ID) {
			writeError(w, http.StatusConflict, codeConflict, fmt.Sprintf("run %s is %s in another process (%d on %s): stop it there", run.ID, status, run.PID, run.Host))
			return
		}
	case runstore.StatusNeedsInput:
		// Nobody runs it: it stops waiting.
		now := time.Now().UTC()
		run.Status, run.Error, run.Updated, run.Ended = runstore.StatusInterrupted, "cancelled while it waited for an answer", now, now
		if err := s.store.Runs.Update(ctx, run); err != nil {
			s.fail(w, err)
			return
		}
	default:
		writeError(w, http.StatusConflict, codeConflict, fmt.Sprintf("run %s is %s: there is nothing to cancel", run.ID, status))
		return
	}
	if fresh, err := s.store.Runs.Get(ctx, run.ID); err == nil {
		run = fresh
	}
	writeJSON(w, http.StatusAccepted, s.runOf(ctx, run, false))
}

func (s *Server) resumeRun(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var req ResumeRequest
	if err := decode(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	run, err := s.run(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	status := run.Effective(time.Now(), runstore.Alive)
	hasAnswer := len(req.Answer) > 0 && string(req.Answer) != "null"
	switch {
	case status == runstore.StatusNeedsInput && !hasAnswer:
		s.fail(w, badRequest("run %s waits for an answer: send {\"answer\": …}", run.ID))
		return
	case status == runstore.StatusInterrupted && hasAnswer:
		s.fail(w, badRequest("run %s waits for no answer (it is interrupted): resume it without one", run.ID))
		return
	case status != runstore.StatusNeedsInput && status != runstore.StatusInterrupted && status != runstore.StatusFailed:
		writeError(w, http.StatusConflict, codeConflict, fmt.Sprintf("run %s is %s: only a run that waits for an answer, was interrupted or failed can be resumed", run.ID, status))
		return
	}
	if hasAnswer {
		if run.Kind == runstore.KindAgent {
			var text string
			if json.Unmarshal(req.Answer, &text) != nil || strings.TrimSpace(text) == "" {
				s.fail(w, badRequest("answer: the answer to the agent's question is a non-empty string"))
				return
			}
		} else if _, err := reviewAnswer(req.Answer); err != nil {
			s.fail(w, badRequest("answer: %v", err))
			return
		}
	}
	err = s.runs.add(ctx, run, req.Answer, func(run *runstore.Run) error {
		run.Status, run.Error, run.Updated = runstore.StatusQueued, "", time.Now().UTC()
		return s.store.Runs.Update(ctx, run)
	})
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, s.runOf(ctx, run, false))
}

func (s *Server) streamRun(w http.ResponseWriter, r *http.Request) {
	after, err := lastEventID(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	run, err := s.run(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.stream(w, r, run, after)
}
