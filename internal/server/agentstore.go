package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/research"
)

// runStoreRecords keeps the Agent Server API's threads and runs in the
// run store, next to their checkpoints — one run store for every kind of
// run, so that research runs lists the API's runs and research show shows
// a research run's report:
//
//   - a thread's record is its runstore.Thread's Data (the threads without
//     Data — those of the command line — are not the API's);
//   - a run is a runstore.Run of its assistant's kind (research or agent)
//     with its question, status, times and error, whose Settings hold its
//     record (the rest) under "agent_server".
//
// It is simpler than a store of its own: the run store already opens,
// migrates and prunes these tables in SQLite and PostgreSQL, and the
// checkpointer holds states, not records.
//
// A run's spending (tokens, calls, cost) is written as it goes by the
// run's timeline (progress), and its report when it has one: each in a
// statement of its own that writes only those columns, and the API's
// writes of the run's record (runstore.Store.Put) leave them alone — so
// that none of these writes reads the run first, and none waits for
// another under a lock.
type runStoreRecords struct {
	runs runstore.Store
	// live holds the ids of the runs whose record was put and has not
	// ended: those that have a journal (journal), read without a store
	// round trip.
	live sync.Map
}

// apiRunSettings is the Settings of a run of the API.
type apiRunSettings struct {
	Record *agentserver.RunRecord `json:"agent_server"`
}

// apiRecord is the record of a stored run (read whole, with its Settings)
// of the Agent Server API; nil for another run.
func apiRecord(run *runstore.Run) *agentserver.RunRecord {
	var set apiRunSettings
	if json.Unmarshal(run.Settings, &set) != nil || set.Record == nil {
		return nil
	}
	set.Record.Error = run.Error
	return set.Record
}

// kindOf is the run store's kind of the runs of an assistant.
var kindOf = map[string]runstore.Kind{agentserver.AssistantID(graphResearch): runstore.KindResearch,
	agentserver.AssistantID(graphAgent): runstore.KindAgent, agentserver.AssistantID(graphFlow): runstore.KindFlow}

// storeStatus is the run store's status of an API run's.
var storeStatus = map[string]runstore.Status{"pending": runstore.StatusQueued, "running": runstore.StatusRunning,
	"success": runstore.StatusDone, "error": runstore.StatusFailed, "interrupted": runstore.StatusInterrupted}

func (s *runStoreRecords) Threads(ctx context.Context) ([]agentserver.ThreadRecord, error) {
	threads, err := s.runs.ListThreads(ctx, runstore.ThreadListOptions{})
	if err != nil {
		return nil, err
	}
	var out []agentserver.ThreadRecord
	for _, t := range threads {
		if len(t.Data) == 0 {
			continue
		}
		var rec agentserver.ThreadRecord
		if err := json.Unmarshal(t.Data, &rec); err != nil || rec.ID != t.ID {
			return nil, fmt.Errorf("thread %s: its record cannot be read (research rm its runs, or delete the thread): %v", t.ID, err)
		}
		out = append(out, rec)
	}
	return out, nil
}

func (s *runStoreRecords) ThreadRuns(ctx context.Context, threadID string) ([]agentserver.RunRecord, error) {
	runs, err := s.runs.ThreadRuns(ctx, threadID)
	if err != nil {
		return nil, err
	}
	var out []agentserver.RunRecord
	for _, sum := range runs {
		run, err := s.runs.Get(ctx, sum.ID)
		if err != nil {
			return nil, err
		}
		if rec := apiRecord(run); rec != nil {
			out = append(out, *rec)
		}
	}
	return out, nil
}

func (s *runStoreRecords) PutThread(ctx context.Context, t agentserver.ThreadRecord) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return s.runs.PutThreadData(ctx, &runstore.Thread{ID: t.ID, Created: t.CreatedAt, Updated: t.UpdatedAt, Data: data})
}

func (s *runStoreRecords) DeleteThread(ctx context.Context, id string) error {
	if err := s.runs.DeleteThread(ctx, id); err != nil && !errors.Is(err, runstore.ErrNotFound) {
		return err
	}
	return nil
}

func (s *runStoreRecords) PutRun(ctx context.Context, r agentserver.RunRecord) error {
	kind, ok := kindOf[r.AssistantID]
	if !ok {
		return fmt.Errorf("run %s: the run store keeps runs of research, agent and flow, not of assistant %s", r.ID, r.AssistantID)
	}
	settings, err := json.Marshal(apiRunSettings{Record: &r})
	if err != nil {
		return err
	}
	var in struct {
		Input struct {
			Messages []agentserver.Message `json:"messages"`
		} `json:"input"`
	}
	_ = json.Unmarshal(r.Kwargs, &in) // a run without messages (a resume) has no question
	question, _ := lastHuman(in.Input.Messages, "question", math.MaxInt)
	run := &runstore.Run{ID: r.ID, Thread: r.ThreadID, Kind: kind, Question: question, Status: storeStatus[r.Status],
		Started: r.CreatedAt, Updated: r.UpdatedAt, Error: r.Error, Settings: settings}
	switch run.Status {
	case runstore.StatusRunning:
		run.Host, run.PID = runstore.CurrentProcess()
	case runstore.StatusDone, runstore.StatusFailed, runstore.StatusInterrupted:
		run.Ended = r.UpdatedAt
	}
	if err := s.runs.Put(ctx, run); err != nil {
		return err
	}
	if run.Ended.IsZero() {
		s.live.Store(r.ID, struct{}{})
	} else {
		s.live.Delete(r.ID)
	}
	return nil
}

// journal is the record of the external calls the run pays for
// (app.ThreadJournal): recorded under the run, recalled from its thread's
// runs; nil for a run without a record (a stateless run's), which keeps
// them in memory while it runs.
func (s *runStoreRecords) journal(_ context.Context, cfg agentserver.RunConfig) research.CallJournal {
	if _, ok := s.live.Load(cfg.RunID); !ok {
		return nil
	}
	return app.ThreadJournal(s.runs, cfg.ThreadID, cfg.RunID)
}

// report stores doc as the run's report, what research show prints. When
// it cannot be stored, research show says the run has no answer stored;
// the thread's state keeps it all the same.
func (s *runStoreRecords) report(ctx context.Context, runID string, doc any) {
	if _, ok := s.live.Load(runID); !ok {
		return
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return
	}
	_ = s.runs.SetReport(ctx, runID, data)
}

// progressEvery is how often at most a run's spending is written to its
// record while it runs; its end writes what it spent last.
const progressEvery = time.Second

// progress returns what records a run's spending so far in its record:
// nothing for a run without one (a stateless run's).
func (s *runStoreRecords) progress(runID string) *spendingWriter {
	return &spendingWriter{records: s, runID: runID}
}

// spendingWriter writes a run's spending to its record: at once, then at
// most once every progressEvery while the run goes on (a model call's
// spending is not worth a write of its own), and at its end (flush) what
// it had not written.
type spendingWriter struct {
	records *runStoreRecords
	runID   string
	mu      sync.Mutex
	written time.Time
	pending *spending
}

// record takes what the run has spent so far.
func (w *spendingWriter) record(sp spending) {
	w.mu.Lock()
	if time.Since(w.written) < progressEvery {
		w.pending = &sp
		w.mu.Unlock()
		return
	}
	w.written, w.pending = time.Now(), nil
	w.mu.Unlock()
	w.write(sp) // not under mu: it writes to the run store
}

// flush writes what was recorded and not written yet.
func (w *spendingWriter) flush() {
	w.mu.Lock()
	sp := w.pending
	w.pending = nil
	w.mu.Unlock()
	if sp != nil {
		w.write(*sp)
	}
}

func (w *spendingWriter) write(sp spending) {
	if _, ok := w.records.live.Load(w.runID); !ok {
		return
	}
	// The next write, or the run's end, tries again.
	_ = w.records.runs.SetSpending(context.Background(), w.runID, int64(sp.tokens), sp.calls, sp.cost)
}

func (s *runStoreRecords) DeleteRun(ctx context.Context, id string) error {
	s.live.Delete(id)
	if err := s.runs.Delete(ctx, id); err != nil && !errors.Is(err, runstore.ErrNotFound) {
		return err
	}
	return nil
}
