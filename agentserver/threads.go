package agentserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/graph"
)

// thread is a thread the server knows: its metadata and runs. Its state is
// in the checkpointer.
type thread struct {
	id               string
	created, updated time.Time
	stateUpdated     time.Time
	metadata         Metadata
	graphID          string // the graph of its runs, once it had one
	runs             []*run // oldest first
	status           string // after its last run ended
	stateless        bool   // made for a /runs run: deleted after it
	// saved is the record last written to the store, by its records'
	// queue (records.go): a write of the same record is skipped.
	saved *ThreadRecord
}

func itoa(n int) string { return strconv.Itoa(n) }

type threadCreate struct {
	ThreadID string   `json:"thread_id"`
	Metadata Metadata `json:"metadata"`
	IfExists string   `json:"if_exists"`
}

func newUUID() string { return graphUUID() }

func (s *Server) createThread(w http.ResponseWriter, r *http.Request) {
	var req threadCreate
	if err := decode(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	t, err := s.newThread(req.ThreadID, req.Metadata, req.IfExists, false)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.threadOf(r.Context(), t))
}

// newThread creates a thread (id "": a new UUID); ifExists "do_nothing"
// returns an existing one, "raise" (the default) refuses it. A stateless
// thread (of a /runs run) is not kept in the store.
func (s *Server) newThread(id string, md Metadata, ifExists string, stateless bool) (*thread, error) {
	if id == "" {
		id = newUUID()
	} else if !validUUID(id) {
		return nil, badRequest("thread_id %q is not a UUID", id)
	}
	if ifExists != "" && ifExists != "raise" && ifExists != "do_nothing" {
		return nil, badRequest("if_exists %q: use raise or do_nothing", ifExists)
	}
	t, err := s.addThread(id, md, ifExists, stateless)
	if err == nil {
		s.saveThread(t)
	}
	return t, err
}

func (s *Server) addThread(id string, md Metadata, ifExists string, stateless bool) (*thread, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.threads[id]; ok {
		if ifExists == "do_nothing" {
			return t, nil
		}
		return nil, fmt.Errorf("%w: thread %s exists already (if_exists: do_nothing returns it)", errConflict, id)
	}
	if len(s.threads) >= s.opts.MaxThreads {
		return nil, fmt.Errorf("%w: this server keeps at most %d; delete threads you no longer need", errTooMany, s.opts.MaxThreads)
	}
	now := time.Now().UTC()
	if md == nil {
		md = Metadata{}
	}
	t := &thread{id: id, created: now, updated: now, stateUpdated: now, metadata: cloneMetadata(md), status: threadIdle, stateless: stateless}
	s.threads[id] = t
	return t, nil
}

func (s *Server) thread(id string) (*thread, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.threads[id]
	if !ok {
		return nil, fmt.Errorf("%w: thread %s", errNotFound, id)
	}
	return t, nil
}

// graphOf is the graph a thread's runs ran, nil before its first run.
func (s *Server) graphOf(t *thread) Graph {
	s.mu.Lock()
	id := t.graphID
	s.mu.Unlock()
	if id == "" {
		return nil
	}
	a, err := s.assistantFor(id)
	if err != nil {
		return nil
	}
	return a.g
}

// statusOf is a thread's status: busy while a run is pending or running.
// Called with s.mu held.
func (t *thread) statusLocked() string {
	for _, r := range t.runs {
		if r.status == runPending || r.status == runRunning {
			return threadBusy
		}
	}
	return t.status
}

func (s *Server) threadOf(ctx context.Context, t *thread) threadOut {
	s.mu.Lock()
	out := threadOut{ThreadID: t.id, CreatedAt: t.created, UpdatedAt: t.updated, StateUpdatedAt: t.stateUpdated,
		Metadata: cloneMetadata(t.metadata), Status: t.statusLocked(), Values: json.RawMessage("null"),
		Interrupts: map[string][]interruptOut{}, Config: json.RawMessage("{}")}
	s.mu.Unlock()
	if g := s.graphOf(t); g != nil {
		values, intr, err := g.values(ctx, t.id)
		if err == nil && values != nil {
			out.Values = values
			if len(intr) > 0 {
				out.Interrupts["__pending__"] = intr
			}
		}
	}
	return out
}

func (s *Server) getThread(w http.ResponseWriter, r *http.Request) {
	t, err := s.thread(r.PathValue("thread_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.threadOf(r.Context(), t))
}

func (s *Server) patchThread(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Metadata Metadata `json:"metadata"`
	}
	if err := decode(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	t, err := s.thread(r.PathValue("thread_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	s.mu.Lock()
	for k, v := range req.Metadata {
		t.metadata[k] = v
	}
	t.updated = time.Now().UTC()
	s.mu.Unlock()
	s.saveThread(t)
	writeJSON(w, http.StatusOK, s.threadOf(r.Context(), t))
}

func (s *Server) deleteThread(w http.ResponseWriter, r *http.Request) {
	t, err := s.thread(r.PathValue("thread_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	if err := s.removeThread(r.Context(), t); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// removeThread deletes a thread with its runs and checkpoints, cancelling
// its runs first.
func (s *Server) removeThread(ctx context.Context, t *thread) error {
	s.mu.Lock()
	runs := slices.Clone(t.runs)
	s.mu.Unlock()
	for _, r := range runs {
		r.stop(errCancelled)
	}
	for _, r := range runs {
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := s.cp.DeleteThread(ctx, t.id); err != nil {
		return fmt.Errorf("deleting thread %s's checkpoints: %w", t.id, err)
	}
	s.mu.Lock()
	delete(s.threads, t.id)
	for _, r := range runs {
		delete(s.runs, r.id)
	}
	s.mu.Unlock()
	if err := s.unstore(ctx, t.id, s.store.DeleteThread, t.id); err != nil {
		return fmt.Errorf("deleting thread %s's record: %w", t.id, err)
	}
	return nil
}

type threadSearch struct {
	IDs       []string        `json:"ids"`
	Metadata  Metadata        `json:"metadata"`
	Values    json.RawMessage `json:"values"`
	Status    string          `json:"status"`
	Limit     int             `json:"limit"`
	Offset    int             `json:"offset"`
	SortBy    string          `json:"sort_by"`
	SortOrder string          `json:"sort_order"`
}

func (s *Server) matchThreads(r *http.Request) ([]threadOut, threadSearch, error) {
	var q threadSearch
	if err := decode(r, &q); err != nil {
		return nil, q, err
	}
	switch q.Status {
	case "", threadIdle, threadBusy, threadInterrupted, threadError:
	default:
		return nil, q, badRequest("status %q: use idle, busy, interrupted or error", q.Status)
	}
	var wantValues Metadata
	if len(q.Values) > 0 && string(q.Values) != "null" {
		if err := json.Unmarshal(q.Values, &wantValues); err != nil {
			return nil, q, badRequest("values: an object of keys to values: %v", err)
		}
	}
	s.mu.Lock()
	var ts []*thread
	for _, t := range s.threads {
		if t.stateless || (len(q.IDs) > 0 && !slices.Contains(q.IDs, t.id)) || !containsAll(t.metadata, q.Metadata) {
			continue
		}
		ts = append(ts, t)
	}
	s.mu.Unlock()
	out := []threadOut{}
	for _, t := range ts {
		o := s.threadOf(r.Context(), t)
		if q.Status != "" && o.Status != q.Status {
			continue
		}
		if wantValues != nil {
			var have Metadata
			if json.Unmarshal(o.Values, &have) != nil || !containsAll(have, wantValues) {
				continue
			}
		}
		out = append(out, o)
	}
	desc := !strings.EqualFold(q.SortOrder, "asc")
	slices.SortStableFunc(out, func(a, b threadOut) int {
		var c int
		switch q.SortBy {
		case "created_at":
			c = a.CreatedAt.Compare(b.CreatedAt)
		case "thread_id":
			c = strings.Compare(a.ThreadID, b.ThreadID)
		default:
			c = a.UpdatedAt.Compare(b.UpdatedAt)
		}
		if desc {
			c = -c
		}
		return c
	})
	return out, q, nil
}

func (s *Server) searchThreads(w http.ResponseWriter, r *http.Request) {
	out, q, err := s.matchThreads(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, page(out, q.Limit, q.Offset, 10, w))
}

func (s *Server) countThreads(w http.ResponseWriter, r *http.Request) {
	out, _, err := s.matchThreads(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, len(out))
}

// emptyState is the state of a thread that has none yet.
func emptyState(thread string) threadState {
	return threadState{Values: json.RawMessage("{}"), Next: []string{}, Tasks: []stateTask{},
		Checkpoint: checkpointRef{ThreadID: thread}, Metadata: checkpointMeta{Parents: map[string]string{}}, Interrupts: []interruptOut{}}
}

func (s *Server) getState(w http.ResponseWriter, r *http.Request) {
	s.stateAt(w, r, r.PathValue("checkpoint_id"))
}

func (s *Server) getStateAt(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Checkpoint checkpointRef `json:"checkpoint"`
	}
	if err := decode(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	s.stateAt(w, r, req.Checkpoint.CheckpointID)
}

func (s *Server) stateAt(w http.ResponseWriter, r *http.Request, checkpointID string) {
	t, err := s.thread(r.PathValue("thread_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	g := s.graphOf(t)
	if g == nil {
		writeJSON(w, http.StatusOK, emptyState(t.id))
		return
	}
	st, err := g.state(r.Context(), graph.Thread(t.id).At(checkpointID))
	if errors.Is(err, graph.ErrCheckpointNotFound) && checkpointID == "" {
		writeJSON(w, http.StatusOK, emptyState(t.id))
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

type stateUpdate struct {
	Values       json.RawMessage `json:"values"`
	AsNode       string          `json:"as_node"`
	CheckpointID string          `json:"checkpoint_id"`
	Checkpoint   *checkpointRef  `json:"checkpoint"`
}

func (s *Server) updateState(w http.ResponseWriter, r *http.Request) {
	var req stateUpdate
	if err := decode(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	t, err := s.thread(r.PathValue("thread_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	g := s.graphOf(t)
	if g == nil {
		s.fail(w, fmt.Errorf("%w: thread %s has no state yet: run it once (its graph is the one of its first run)", errConflict, t.id))
		return
	}
	if s.busy(t) {
		s.fail(w, fmt.Errorf("%w: thread %s has a run in progress: wait for it or cancel it", errConflict, t.id))
		return
	}
	cpID := req.CheckpointID
	if req.Checkpoint != nil && req.Checkpoint.CheckpointID != "" {
		cpID = req.Checkpoint.CheckpointID
	}
	id, err := g.update(r.Context(), graph.Thread(t.id).At(cpID), req.Values, req.AsNode)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.mu.Lock()
	t.stateUpdated, t.updated = time.Now().UTC(), time.Now().UTC()
	s.mu.Unlock()
	s.saveThread(t)
	writeJSON(w, http.StatusOK, struct {
		Checkpoint checkpointRef `json:"checkpoint"`
	}{checkpointRef{ThreadID: t.id, CheckpointID: id}})
}

type historyRequest struct {
	Limit      int            `json:"limit"`
	Before     *checkpointRef `json:"before"`
	Checkpoint *checkpointRef `json:"checkpoint"`
	Metadata   Metadata       `json:"metadata"`
}

func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	req := historyRequest{Limit: 10}
	if r.Method == http.MethodPost {
		if err := decode(r, &req); err != nil {
			s.fail(w, err)
			return
		}
	} else if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			s.fail(w, badRequest("limit %q is not a number", v))
			return
		}
		req.Limit = n
	}
	if req.Limit <= 0 {
		req.Limit = 10
	}
	t, err := s.thread(r.PathValue("thread_id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	g := s.graphOf(t)
	if g == nil {
		writeJSON(w, http.StatusOK, []threadState{})
		return
	}
	at := graph.Thread(t.id)
	if req.Before != nil {
		at = at.At(req.Before.CheckpointID)
	}
	hist, err := g.history(r.Context(), at, req.Limit)
	if errors.Is(err, graph.ErrCheckpointNotFound) {
		hist, err = []threadState{}, nil
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	if len(req.Metadata) > 0 {
		var kept []threadState
		for _, h := range hist {
			md := Metadata{"source": jsonString(h.Metadata.Source), "step": json.RawMessage(itoa(h.Metadata.Step)), "run_id": jsonString(h.Metadata.RunID)}
			if containsAll(md, req.Metadata) {
				kept = append(kept, h)
			}
		}
		hist = kept
	}
	if hist == nil {
		hist = []threadState{}
	}
	writeJSON(w, http.StatusOK, hist)
}
