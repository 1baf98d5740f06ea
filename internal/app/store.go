package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/postgres"
	"github.com/deepgraph/deepgraph/graph/checkpoint/sqlite"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/research"
)

// Store is where runs are kept: the graph checkpoints of each run's thread
// and the registry of runs, together in one SQLite file or one PostgreSQL
// database.
type Store struct {
	Checkpointer graph.Checkpointer
	Runs         runstore.Store
	// Where is the store's location, fit to print (a DSN's password is
	// redacted).
	Where string
	// ReadOnly: the store was opened for reading only (OpenStoreToRead);
	// every write fails.
	ReadOnly bool
	save     *saveState // GoOnWithoutSaving
	close    func()
}

// Close releases the store.
func (s *Store) Close() {
	if s != nil && s.close != nil {
		s.close()
		s.close = nil
	}
}

// OpenStore opens the configured store (the store key), creating it if
// needed; nil when the store is off. A store whose disk is full or that is
// read-only is a *StoreError (ErrStoreUnwritable) that names it and says
// what to do; another store that cannot be opened is a setup error that
// says how to run without one.
func OpenStore(ctx context.Context, cfg *config.Config) (*Store, error) {
	loc, err := cfg.StoreLocation()
	if err != nil {
		return nil, &setupError{err}
	}
	if loc == "" {
		return nil, nil
	}
	return openStore(ctx, loc)
}

// OpenStoreToRead opens the configured store for a command that only
// reads it (listing and showing runs): as OpenStore does, or, when an
// SQLite store exists but cannot be written — a read-only file system or
// directory, a full disk — read-only (Store.ReadOnly).
func OpenStoreToRead(ctx context.Context, cfg *config.Config) (*Store, error) {
	loc, err := cfg.StoreLocation()
	if err != nil {
		return nil, &setupError{err}
	}
	if loc == "" {
		return nil, nil
	}
	st, err := openStore(ctx, loc)
	if err == nil || config.IsPostgres(loc) || !errors.Is(err, ErrStoreUnwritable) {
		return st, err
	}
	if fi, statErr := os.Stat(loc); statErr != nil || fi.Size() == 0 {
		return nil, err // nothing to read: the store was never made
	}
	where := config.RedactDSN(loc)
	lite, roErr := sqlite.OpenReadOnly(ctx, loc)
	if roErr != nil {
		return nil, setupErr("opening the run store %s read-only, as it cannot be written (%v): %w", where, err, roErr)
	}
	runs, roErr := runstore.OpenSQLiteReadOnly(ctx, lite.DB())
	if roErr != nil {
		_ = lite.Close()
		return nil, setupErr("opening the run store %s read-only, as it cannot be written (%v): %w", where, err, roErr)
	}
	return &Store{Checkpointer: lite, Runs: runs, Where: where, ReadOnly: true, close: func() { _ = lite.Close() }}, nil
}

// openStore opens the store at loc, a DSN or a file, creating it if needed.
func openStore(ctx context.Context, loc string) (*Store, error) {
	where := config.RedactDSN(loc)
	file := loc
	if config.IsPostgres(loc) {
		file = ""
	}
	fail := func(err error) error {
		if se := classifyStoreErr(where, file, err); se != nil {
			return se
		}
		return setupErr("opening the run store %s: %w (set --store to another file or DSN, or --no-save to keep nothing)", where, err)
	}
	if config.IsPostgres(loc) {
		pg, err := postgres.Open(ctx, loc)
		if err != nil {
			return nil, fail(err)
		}
		runs, err := runstore.OpenPostgres(ctx, pg.Pool())
		if err != nil {
			pg.Close()
			return nil, fail(err)
		}
		return &Store{Checkpointer: pg, Runs: runs, Where: where, close: pg.Close}, nil
	}
	lite, err := sqlite.Open(ctx, loc)
	if err != nil {
		return nil, fail(err)
	}
	runs, err := runstore.OpenSQLite(ctx, lite.DB())
	if err != nil {
		_ = lite.Close()
		return nil, fail(err)
	}
	return &Store{Checkpointer: lite, Runs: runs, Where: where, close: func() { _ = lite.Close() }}, nil
}

// Settings are what a stored run needs to be resumed as it started: its
// models, back end and limits — never a key.
type Settings struct {
	Models map[string]string `json:"models,omitempty"` // spec per role
	// Backend is the research back end's name (research.Backend.Name), for
	// the report of a run that stopped before writing its own.
	Backend string        `json:"backend,omitempty"`
	Search  []string      `json:"search,omitempty"`
	Corpus  string        `json:"corpus,omitempty"`
	Queries int           `json:"queries,omitempty"`
	Loops   int           `json:"loops,omitempty"`
	Review  bool          `json:"review,omitempty"`
	Agent   *config.Agent `json:"agent,omitempty"`
	// Flow is a flow run's own settings (research flow).
	Flow *FlowRunSettings `json:"flow,omitempty"`
	// Effort is the preset a server's client chose, if any (Queries and
	// Loops hold its values).
	Effort string `json:"effort,omitempty"`
}

// ResearchSettings records the settings of a run of r.
func ResearchSettings(cfg *config.Config, r *Research, review bool) Settings {
	return Settings{Models: r.Models.Specs(), Backend: r.Backend.Name(), Search: cfg.Search, Corpus: cfg.Corpus,
		Queries: cfg.InitialQueries, Loops: cfg.MaxLoops, Review: review}
}

// AgentSettings records an agent run's settings; workspace is the one the
// run uses (a temporary one included, so that a resumed run finds its
// files).
func AgentSettings(cfg *config.Config, spec, workspace string) Settings {
	a := cfg.Agent
	a.Workspace = workspace
	return Settings{Models: map[string]string{"agent": spec}, Search: cfg.Search, Corpus: cfg.Corpus, Agent: &a}
}

// FlowRunSettings are the settings of a flow run that FlowOptions holds.
type FlowRunSettings struct {
	Approve      bool `json:"approve,omitempty"`
	MaxPlanSteps int  `json:"max_plan_steps,omitempty"`
	MaxRevisions int  `json:"max_revisions,omitempty"`
}

// Options are the FlowOptions of a resumed flow run, with its checkpointer.
func (f *FlowRunSettings) Options(cp graph.Checkpointer) FlowOptions {
	if f == nil {
		return FlowOptions{Checkpointer: cp}
	}
	return FlowOptions{Approve: f.Approve, MaxPlanSteps: f.MaxPlanSteps, MaxRevisions: f.MaxRevisions, Checkpointer: cp}
}

// FlowSettings records a flow run's settings: its agent's, the models of
// each role, the researcher's limits and the flow's own options.
func FlowSettings(cfg *config.Config, f *FlowSetup, fo FlowOptions) Settings {
	s := AgentSettings(cfg, f.Agent.Spec, f.Agent.Workspace)
	s.Models = f.Specs()
	s.Queries, s.Loops = cfg.InitialQueries, cfg.MaxLoops
	s.Flow = &FlowRunSettings{Approve: fo.Approve, MaxPlanSteps: fo.MaxPlanSteps, MaxRevisions: fo.MaxRevisions}
	return s
}

// Apply puts the stored settings back into cfg, except for the keys the
// command line sets again (changed reports whether a key's flag was given).
func (s Settings) Apply(cfg *config.Config, changed func(key string) bool) {
	set := func(key string, apply func()) {
		if !changed(key) {
			apply()
		}
	}
	if m := s.Models["agent"]; m != "" {
		set("model", func() { cfg.Model = m })
	}
	for role, key := range map[string]string{"query": "query_generator_model", "research": "research_model", "reflection": "reflection_model", "answer": "answer_model"} {
		if m := s.Models[role]; m != "" {
			set(key, func() { setRoleModel(cfg, role, m) })
		}
	}
	if len(s.Search) > 0 {
		set("search", func() { cfg.Search = s.Search })
	}
	set("corpus", func() { cfg.Corpus = s.Corpus })
	if s.Queries > 0 {
		set("number_of_initial_queries", func() { cfg.InitialQueries = s.Queries })
	}
	if s.Loops > 0 {
		set("max_research_loops", func() { cfg.MaxLoops = s.Loops })
	}
	if a := s.Agent; a != nil {
		set("agent.workspace", func() { cfg.Agent.Workspace = a.Workspace })
		set("agent.allow_exec", func() { cfg.Agent.AllowExec = a.AllowExec })
		set("agent.max_steps", func() { cfg.Agent.MaxSteps = a.MaxSteps })
		set("agent.tools", func() { cfg.Agent.Tools = a.Tools })
		set("agent.deny_tools", func() { cfg.Agent.DenyTools = a.DenyTools })
		set("agent.approve_tools", func() { cfg.Agent.ApproveTools = a.ApproveTools })
		set("agent.text_mode", func() { cfg.Agent.TextMode = a.TextMode })
		set("agent.browser", func() { cfg.Agent.Browser = a.Browser })
	}
}

func setRoleModel(cfg *config.Config, role, spec string) {
	switch role {
	case "query":
		cfg.QueryModel = spec
	case "research":
		cfg.ResearchModel = spec
	case "reflection":
		cfg.ReflectionModel = spec
	case "answer":
		cfg.AnswerModel = spec
	}
	if cfg.Model == "" {
		cfg.Model = spec
	}
}

// SettingsOf decodes a stored run's settings.
func SettingsOf(run *runstore.Run) (Settings, error) {
	var s Settings
	if len(run.Settings) == 0 {
		return s, nil
	}
	if err := json.Unmarshal(run.Settings, &s); err != nil {
		return s, fmt.Errorf("run %s: its stored settings cannot be read: %w", run.ID, err)
	}
	return s, nil
}

// Tracker keeps a run's record up to date while it runs.
type Tracker struct {
	runs   runstore.Store
	Run    *runstore.Run
	logger *slog.Logger
	// Resumed: the run started in an earlier process (Continue).
	Resumed bool
	save    *saveState
}

// Ref names the tracked run in its documents; empty for a nil Tracker (a
// run not kept).
func (t *Tracker) Ref() RunRef {
	if t == nil || t.Run == nil {
		return RunRef{}
	}
	return RunRef{RunID: t.Run.ID, ThreadID: t.Run.Thread}
}

// Begin records a new run as running in this process.
func (s *Store) Begin(ctx context.Context, kind runstore.Kind, question, thread string, set Settings, logger *slog.Logger) (*Tracker, error) {
	settings, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("recording the run's settings: %w", err)
	}
	id := runstore.NewID()
	if thread == "" {
		thread = id
	}
	now := time.Now().UTC()
	run := &runstore.Run{ID: id, Thread: thread, Kind: kind, Question: question, Status: runstore.StatusRunning,
		Started: now, Updated: now, Settings: settings}
	host(run)
	if err := s.Runs.Create(ctx, run); err != nil {
		return nil, fmt.Errorf("recording the run in %s: %w", s.Where, err)
	}
	return &Tracker{runs: s.Runs, Run: run, logger: orDiscard(logger), save: s.save}, nil
}

// Continue marks a stored run as running again, in this process, run being
// the run as read from the store. A run that is running in a live process
// is refused, and so is one that another process took up since it was read
// (runstore.ErrClaimed): the claim is one conditional write, so of two
// resumes started together only one goes on.
func (s *Store) Continue(ctx context.Context, run *runstore.Run, logger *slog.Logger) (*Tracker, error) {
	if run.Effective(time.Now(), runstore.Alive) == runstore.StatusRunning {
		return nil, fmt.Errorf("run %s is running now (process %d on %s); wait for it or stop it before resuming", run.ID, run.PID, run.Host)
	}
	seen := *run
	run.Status, run.Error, run.Ended, run.Updated = runstore.StatusRunning, "", time.Time{}, time.Now().UTC()
	host(run)
	if err := s.Runs.Claim(ctx, run, &seen); err != nil {
		*run = seen
		if errors.Is(err, runstore.ErrClaimed) {
			return nil, fmt.Errorf("%w; wait for it or stop it before resuming", err)
		}
		return nil, fmt.Errorf("recording the run in %s: %w", s.Where, err)
	}
	return &Tracker{runs: s.Runs, Run: run, logger: orDiscard(logger), Resumed: true, save: s.save}, nil
}

func host(run *runstore.Run) {
	run.Host, _ = os.Hostname()
	run.PID = os.Getpid()
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// Journal is the run's record of the external calls it pays for —
// searches, page reads — in the run store (runstore.Store.RecordCall), for
// research.Journal: a resumed run serves them from there. Nil for a nil
// Tracker.
func (t *Tracker) Journal() research.CallJournal {
	if t == nil {
		return nil
	}
	return runJournal{runs: t.runs, id: t.Run.ID, save: t.save}
}

// ThreadJournal is the record of the external calls a served run pays for
// — searches, page reads, an agent's tool calls with side effects — in the
// run store: they are recorded under the run, and recalled from every run
// of its thread, newest first. A run that continues its thread's
// unfinished tasks (input null after a cancel, a crash or a restart) is a
// new run: it serves what the runs before it had paid for from there; a
// follow-up question on the thread reuses a search or page read it repeats
// word for word. The calls go with their runs.
func ThreadJournal(runs runstore.Store, thread, run string) research.CallJournal {
	return threadJournal{runJournal: runJournal{runs: runs, id: run}, thread: thread}
}

type threadJournal struct {
	runJournal // records
	thread     string
}

func (j threadJournal) Recall(ctx context.Context, key string) ([]byte, bool, error) {
	runs, err := j.runs.ThreadRuns(ctx, j.thread)
	if err != nil {
		return nil, false, err
	}
	for i := len(runs) - 1; i >= 0; i-- { // ThreadRuns lists them oldest first
		data, ok, err := runJournal{runs: j.runs, id: runs[i].ID}.Recall(ctx, key)
		if ok || err != nil {
			return data, ok, err
		}
	}
	return nil, false, nil
}

// runJournal is a run's calls in the run store.
type runJournal struct {
	runs runstore.Store
	id   string
	save *saveState // the store's, once saving stopped
}

// recordTimeout bounds recording a call once the run is cancelled: the
// call was paid for, so it is kept even then.
const recordTimeout = 10 * time.Second

func (j runJournal) Recall(ctx context.Context, key string) ([]byte, bool, error) {
	data, err := j.runs.Call(ctx, j.id, key)
	switch {
	case errors.Is(err, runstore.ErrNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return data, true, nil
}

func (j runJournal) Record(ctx context.Context, key string, data []byte) error {
	if j.save.failed() != nil {
		return nil // the run is not kept: its calls neither
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	err := j.runs.RecordCall(ctx, j.id, key, data)
	if j.save != nil && tolerable(ctx, err) {
		j.save.fail(err) // the run goes on without saving
		return nil
	}
	return err
}

// Progress records the tokens and model calls spent so far. A failure to
// record is logged: the run itself is stored by its checkpoints.
func (t *Tracker) Progress(ctx context.Context, tokens int64, calls int) {
	if t == nil {
		return
	}
	t.Run.Tokens, t.Run.Calls, t.Run.Updated = tokens, calls, time.Now().UTC()
	if t.save.failed() != nil {
		return // the run is not kept: its progress neither
	}
	if err := t.runs.Update(context.WithoutCancel(ctx), t.Run); err != nil {
		if t.save != nil {
			t.save.fail(err) // the run goes on without saving
			return
		}
		t.logger.Warn("could not record the run's progress", "run", t.Run.ID, "err", err)
	}
}

// Finish records how the run ended and its report (JSON, may be nil).
func (t *Tracker) Finish(ctx context.Context, status runstore.Status, why string, report []byte) error {
	if t == nil {
		return nil
	}
	now := time.Now().UTC()
	t.Run.Status, t.Run.Error, t.Run.Updated = status, why, now
	if status != runstore.StatusNeedsInput {
		t.Run.Ended = now
	}
	if report != nil {
		t.Run.Report = report
	}
	if err := t.runs.Update(context.WithoutCancel(ctx), t.Run); err != nil {
		return fmt.Errorf("recording the end of run %s: %w", t.Run.ID, err)
	}
	return nil
}

// FindRun looks a run up by id or unique prefix, saying what to do when
// there is none.
func (s *Store) FindRun(ctx context.Context, id string) (*runstore.Run, error) {
	run, err := s.Runs.Get(ctx, id)
	if errors.Is(err, runstore.ErrNotFound) {
		return nil, fmt.Errorf("%w in %s (research runs lists the runs kept there)", err, s.Where)
	}
	return run, err
}

// Remove deletes a run and, when no other run uses it, its thread's
// checkpoints.
func (s *Store) Remove(ctx context.Context, run *runstore.Run) error {
	if err := s.Runs.Delete(ctx, run.ID); err != nil {
		return err
	}
	return s.dropThread(ctx, run)
}

// Prune removes the runs started before before that are no longer running,
// with the checkpoints of the threads no other run uses, and returns them.
func (s *Store) Prune(ctx context.Context, before time.Time) ([]*runstore.Run, error) {
	removed, err := s.Runs.Prune(ctx, before)
	if err != nil {
		return nil, err
	}
	for _, r := range removed {
		if err := s.dropThread(ctx, r); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// dropThread deletes the checkpoints of removed run's thread when no run
// uses it any more.
func (s *Store) dropThread(ctx context.Context, removed *runstore.Run) error {
	others, err := s.Runs.ThreadRuns(ctx, removed.Thread)
	if err != nil {
		return err
	}
	if len(others) == 0 {
		if err := s.Checkpointer.DeleteThread(ctx, removed.Thread); err != nil {
			return fmt.Errorf("deleting the checkpoints of run %s: %w", removed.ID, err)
		}
	}
	return nil
}
