package agentserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Store keeps the records of the server's threads and runs, so that a
// restarted server knows them: their metadata, statuses and requests. A
// thread's state is not in them: it is in the checkpointer.
//
// The server reads every record once, in New, and writes through on every
// change (a thread created, patched, run or deleted; a run queued, started,
// ended or deleted): one write at a time per thread (its record and its
// runs'), in order, the threads' writes at once — a Store is called
// concurrently. A request whose thread's records are being written does not
// wait for them: its own write follows them, and the request goes on (a
// run's end is written before the run is done, and Shutdown waits for the
// writes asked for). Threads of stateless runs (/runs/stream, /runs/wait,
// /runs) are not kept. MemoryStore keeps them in memory; research serve
// keeps them in its run store.
type Store interface {
	// Threads returns every thread kept, in any order.
	Threads(ctx context.Context) ([]ThreadRecord, error)
	// ThreadRuns returns the runs kept of a thread, oldest first (none for
	// a thread it does not know).
	ThreadRuns(ctx context.Context, threadID string) ([]RunRecord, error)
	// PutThread stores a thread's record, new or replacing the one with
	// its ID.
	PutThread(ctx context.Context, t ThreadRecord) error
	// DeleteThread removes a thread's record and its runs' (deleting one
	// it does not know is not an error).
	DeleteThread(ctx context.Context, id string) error
	// PutRun stores a run's record, new or replacing the one with its ID.
	// Its thread's record is put before it.
	PutRun(ctx context.Context, r RunRecord) error
	// DeleteRun removes a run's record (deleting one it does not know is
	// not an error).
	DeleteRun(ctx context.Context, id string) error
}

// ThreadRecord is what a Store keeps of a thread.
type ThreadRecord struct {
	ID             string    `json:"thread_id"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	StateUpdatedAt time.Time `json:"state_updated_at"`
	Metadata       Metadata  `json:"metadata"`
	// GraphID is the graph its runs run; "" before its first run.
	GraphID string `json:"graph_id,omitempty"`
	// Status is how its last run ended: idle, interrupted (waiting for an
	// answer) or error; busy is not kept (a run in progress is).
	Status string `json:"status"`
}

// RunRecord is what a Store keeps of a run: the run as the API shows it
// (LangGraph's Run), and why it failed.
type RunRecord struct {
	ID          string    `json:"run_id"`
	ThreadID    string    `json:"thread_id"`
	AssistantID string    `json:"assistant_id"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Status is pending, running, success, error or interrupted. A run a
	// stopped server left pending or running is read back as interrupted.
	Status            string   `json:"status"`
	Metadata          Metadata `json:"metadata"`
	MultitaskStrategy string   `json:"multitask_strategy"`
	// Kwargs is the run's request, as a client sent it.
	Kwargs json.RawMessage `json:"kwargs"`
	// Error says why it failed, or why a server stopped it (not in the
	// API's document).
	Error string `json:"-"`
}

// MemoryStore is a Store in memory: the server's default, whose records
// go with its process. Share one between servers in a process (tests) to
// restart a server.
type MemoryStore struct {
	mu      sync.Mutex
	threads map[string]ThreadRecord
	runs    map[string]RunRecord
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{threads: map[string]ThreadRecord{}, runs: map[string]RunRecord{}}
}

// Threads implements Store.
func (m *MemoryStore) Threads(context.Context) ([]ThreadRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ThreadRecord, 0, len(m.threads))
	for _, t := range m.threads {
		t.Metadata = cloneMetadata(t.Metadata)
		out = append(out, t)
	}
	return out, nil
}

// ThreadRuns implements Store.
func (m *MemoryStore) ThreadRuns(_ context.Context, threadID string) ([]RunRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []RunRecord
	for _, r := range m.runs {
		if r.ThreadID == threadID {
			r.Metadata = cloneMetadata(r.Metadata)
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b RunRecord) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// PutThread implements Store.
func (m *MemoryStore) PutThread(_ context.Context, t ThreadRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t.Metadata = cloneMetadata(t.Metadata)
	m.threads[t.ID] = t
	return nil
}

// DeleteThread implements Store.
func (m *MemoryStore) DeleteThread(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.threads, id)
	for rid, r := range m.runs {
		if r.ThreadID == id {
			delete(m.runs, rid)
		}
	}
	return nil
}

// PutRun implements Store.
func (m *MemoryStore) PutRun(_ context.Context, r RunRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.threads[r.ThreadID]; !ok {
		return fmt.Errorf("agentserver: run %s: its thread %s is not kept", r.ID, r.ThreadID)
	}
	r.Metadata = cloneMetadata(r.Metadata)
	m.runs[r.ID] = r
	return nil
}

// DeleteRun implements Store.
func (m *MemoryStore) DeleteRun(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.runs, id)
	return nil
}

// load reads the store's records into the server (New): runs a stopped
// server left pending or running are interrupted, and kept so.
func (s *Server) load(ctx context.Context) error {
	recs, err := s.store.Threads(ctx)
	if err != nil {
		return fmt.Errorf("agentserver: reading the threads kept: %w", err)
	}
	now := time.Now().UTC()
	for _, tr := range recs {
		t := &thread{id: tr.ID, created: tr.CreatedAt, updated: tr.UpdatedAt, stateUpdated: tr.StateUpdatedAt,
			metadata: cloneMetadata(tr.Metadata), graphID: tr.GraphID, status: cmp.Or(tr.Status, threadIdle)}
		if t.metadata == nil {
			t.metadata = Metadata{}
		}
		runs, err := s.store.ThreadRuns(ctx, tr.ID)
		if err != nil {
			return fmt.Errorf("agentserver: reading the runs kept of thread %s: %w", tr.ID, err)
		}
		// What the stopped server left undone on the thread: the run it
		// was running, when no later run took the thread up, then those
		// it left pending.
		var stopped *leftRun
		var pending []leftRun
		for _, rr := range runs {
			ru := &run{id: rr.ID, thread: t, asst: &assistant{id: rr.AssistantID}, created: rr.CreatedAt,
				metadata: cloneMetadata(rr.Metadata), strategy: rr.MultitaskStrategy, kwargs: rr.Kwargs, log: newEventLog(),
				done: make(chan struct{}), status: rr.Status, updated: rr.UpdatedAt}
			if ru.metadata == nil {
				ru.metadata = Metadata{}
			}
			switch {
			case rr.Status == runPending:
				pending = append(pending, leftRun{ru, rr.Kwargs})
			case rr.Status == runRunning || rr.Error == stoppedByShutdown:
				stopped = &leftRun{ru, nil}
			default:
				stopped = nil // a later run took the thread up
			}
			if ru.status == runPending || ru.status == runRunning {
				ru.status, ru.updated = runInterrupted, now
				rr.Status, rr.UpdatedAt = ru.status, ru.updated
				if err := s.store.PutRun(ctx, rr); err != nil {
					return fmt.Errorf("agentserver: keeping run %s as interrupted: %w", rr.ID, err)
				}
			}
			if rr.Error != "" {
				ru.end.err = errors.New(rr.Error)
			}
			ru.ctx, ru.cancel = context.WithCancelCause(s.ctx)
			ru.log.close()
			close(ru.done)
			t.runs = append(t.runs, ru)
			s.runs[ru.id] = ru
		}
		if stopped != nil {
			s.left = append(s.left, *stopped)
		}
		s.left = append(s.left, pending...)
		s.threads[t.id] = t
	}
	return nil
}

// stoppedByShutdown is the Error of a run a server's Shutdown interrupted.
const stoppedByShutdown = "stopped by the server's shutdown"

// leftRun is a run a stopped server left: pending (its request, to run
// again) or running (nil: to continue).
type leftRun struct {
	run     *run
	request json.RawMessage
}

// ResumeRuns starts again what a stopped server left undone (as New read
// it from the store, where those runs are interrupted): each run it left
// pending runs anew with its request, and with interrupted, each run it
// was running — also one its Shutdown stopped — is continued on its thread
// by a run with input null (only the tasks that had not finished run). The
// new runs queue behind each other on their threads (multitask_strategy
// enqueue). Call it once, after Serve.
func (s *Server) ResumeRuns(ctx context.Context, interrupted bool) error {
	s.mu.Lock()
	left := s.left
	s.left = nil
	s.mu.Unlock()
	var errs []error
	for _, l := range left {
		body := l.request
		if body == nil {
			if !interrupted {
				continue
			}
			body, _ = json.Marshal(runCreate{AssistantID: l.run.asst.id, Input: json.RawMessage("null")})
		}
		var req runCreate
		if err := json.Unmarshal(body, &req); err != nil {
			errs = append(errs, fmt.Errorf("run %s: its request cannot be read: %w", l.run.id, err))
			continue
		}
		req.MultitaskStrategy = "enqueue"
		body, _ = json.Marshal(req)
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/threads/"+l.run.thread.id+"/runs", bytes.NewReader(body))
		if err == nil {
			_, err = s.newRun(r, l.run.thread.id)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("run %s of thread %s: %w", l.run.id, l.run.thread.id, err))
		}
	}
	return errors.Join(errs...)
}
