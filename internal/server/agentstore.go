package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/keymu"
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
// run's timeline (progress), and kept when the API writes the run's record.
type runStoreRecords struct {
	runs runstore.Store
	// locks order the read-modify-writes of each run (PutRun, report,
	// progress); the writes of other runs do not wait for them.
	locks keymu.Map
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
	err = s.runs.SetThreadData(ctx, t.ID, data)
	if errors.Is(err, runstore.ErrNotFound) {
		err = s.runs.CreateThread(ctx, &runstore.Thread{ID: t.ID, Created: t.CreatedAt, Updated: t.UpdatedAt, Data: data})
	}
	return err
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
	unlock := s.locks.Lock(r.ID)
	defer unlock()
	old, err := s.runs.Get(ctx, r.ID)
	switch {
	case errors.Is(err, runstore.ErrNotFound):
		return s.runs.Create(ctx, run)
	case err != nil:
		return err
	}
	run.Tokens, run.Calls, run.Cost, run.Report = old.Tokens, old.Calls, old.Cost, old.Report
	return s.runs.Update(ctx, run)
}

// journal is the record of the external calls the run pays for
// (app.ThreadJournal): recorded under the run, recalled from its thread's
// runs; nil for a run without a record (a stateless run's), which keeps
// them in memory while it runs.
func (s *runStoreRecords) journal(ctx context.Context, cfg agentserver.RunConfig) research.CallJournal {
	if _, err := s.runs.Get(ctx, cfg.RunID); err != nil {
		return nil
	}
	return app.ThreadJournal(s.runs, cfg.ThreadID, cfg.RunID)
}

// report stores doc as the run's report, what research show prints. When
// it cannot be stored, research show says the run has no answer stored;
// the thread's state keeps it all the same.
func (s *runStoreRecords) report(ctx context.Context, runID string, doc any) {
	data, err := json.Marshal(doc)
	if err != nil {
		return
	}
	unlock := s.locks.Lock(runID)
	defer unlock()
	run, err := s.runs.Get(ctx, runID)
	if err != nil {
		return
	}
	run.Report = data
	_ = s.runs.Update(ctx, run)
}

// progress returns what records a run's spending so far (tokens, model
// calls, cost in US dollars or nil when unknown) in its record: nothing
// for a run without one (a stateless run's).
func (s *runStoreRecords) progress(runID string) func(tokens, calls int, cost *float64) {
	return func(tokens, calls int, cost *float64) {
		ctx := context.Background()
		unlock := s.locks.Lock(runID)
		defer unlock()
		run, err := s.runs.Get(ctx, runID)
		if err != nil {
			return
		}
		run.Tokens, run.Calls, run.Cost = int64(tokens), calls, cost
		_ = s.runs.Update(ctx, run) // the next progress, or the run's end, tries again
	}
}

func (s *runStoreRecords) DeleteRun(ctx context.Context, id string) error {
	if err := s.runs.Delete(ctx, id); err != nil && !errors.Is(err, runstore.ErrNotFound) {
		return err
	}
	return nil
}
