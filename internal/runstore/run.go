package runstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"time"
)

// Status is the state of a run as its process last wrote it. Effective
// tells what it means now.
type Status string

// The statuses of a run.
const (
	// StatusQueued: the run waits in a server's queue and has not started;
	// no process works on it yet, so Effective leaves it queued and Prune
	// keeps it.
	StatusQueued Status = "queued"
	// StatusRunning: a process is working on the run.
	StatusRunning Status = "running"
	// StatusDone: the run finished with a report.
	StatusDone Status = "done"
	// StatusFailed: the run stopped on an error (Run.Error says which).
	StatusFailed Status = "failed"
	// StatusInterrupted: the run was stopped before it finished (cancelled,
	// killed, or its process crashed); it can be resumed.
	StatusInterrupted Status = "interrupted"
	// StatusNeedsInput: the run paused for answers from a human; resuming
	// it with the answers goes on.
	StatusNeedsInput Status = "needs-input"
)

// Kind is the command that started a run.
type Kind string

// The kinds of run.
const (
	// KindResearch is a run of `research "question"`.
	KindResearch Kind = "research"
	// KindAgent is a run of `research agent "task"`.
	KindAgent Kind = "agent"
	// KindFlow is a run of `research flow "task"`.
	KindFlow Kind = "flow"
)

func (k Kind) valid() bool { return k == KindResearch || k == KindAgent || k == KindFlow }

// MinPrefix is the shortest id prefix Get resolves.
const MinPrefix = 4

// MaxDocumentBytes bounds Run.Settings, Run.Report and a recorded call, when
// written and when read back.
const MaxDocumentBytes = 16 << 20

// StaleAfter is how long a running run of another machine may go without
// an update before Effective reports it as interrupted: its process cannot
// be checked from here, and a live one writes after every step.
const StaleAfter = 24 * time.Hour

// The errors of a Store, wrapped with the run or thread concerned
// and what to do.
var (
	// ErrNotFound: no run has the id (or the prefix matches none); from
	// GetThread, SetThreadData and DeleteThread, there is no such thread;
	// from Call, the call is not recorded.
	ErrNotFound = errors.New("runstore: no such run")
	// ErrAmbiguous: an id prefix matches more than one run.
	ErrAmbiguous = errors.New("runstore: ambiguous run id")
	// ErrExists: Create or CreateThread was given an id that is already
	// stored.
	ErrExists = errors.New("runstore: run id already exists")
	// ErrInvalid: a run given to Create or Update, a thread given to
	// CreateThread or a call given to RecordCall is incomplete or
	// malformed.
	ErrInvalid = errors.New("runstore: invalid run")
	// ErrTooLarge: a run's Settings or Report, a thread's Data or a
	// recorded call is over MaxDocumentBytes.
	ErrTooLarge = errors.New("runstore: document too large")
	// ErrCorrupt: a stored run cannot be read back.
	ErrCorrupt = errors.New("runstore: stored run is corrupt")
)

// Run is one run of the research command: one row of the registry.
//
// Times are stored in UTC to the microsecond. Question, Error and Host are
// stored as valid UTF-8 without NUL (other bytes become U+FFFD); ID and
// Thread must be so already. Settings and Report are JSON documents stored
// verbatim; List, ThreadRuns and Prune leave them out (nil), and so does
// JSON output then.
type Run struct {
	// ID names the run (NewID); the CLI accepts a unique prefix of it.
	ID string `json:"id"`
	// Thread is the graph thread of the run's checkpoints; a follow-up
	// question reuses the thread of an earlier run.
	Thread string `json:"thread"`
	// Kind is the command that started the run.
	Kind Kind `json:"kind"`
	// Question is the question or the task.
	Question string `json:"question"`
	// Status is the state its process last wrote; see Effective.
	Status Status `json:"status"`
	// Started is when the run was created.
	Started time.Time `json:"started"`
	// Updated is when the run was last written.
	Updated time.Time `json:"updated,omitzero"`
	// Ended is when the run last stopped; zero while it has not.
	Ended time.Time `json:"ended,omitzero"`
	// Error says why the run failed or stopped, already redacted.
	Error string `json:"error,omitempty"`
	// Tokens is the number of tokens spent so far.
	Tokens int64 `json:"tokens"`
	// Calls is the number of model calls so far.
	Calls int `json:"calls"`
	// Cost is what the run's model calls cost so far, in US dollars; nil
	// when it is unknown — a model of the run has no known price, or the
	// run was recorded before costs were (schema version 2 and older). It
	// is never 0 for unknown.
	Cost *float64 `json:"cost_usd"`
	// Host is the host name of the machine of the process running the run
	// (CurrentProcess).
	Host string `json:"host,omitempty"`
	// PID is the process id of that process.
	PID int `json:"pid,omitempty"`
	// Settings is what resuming needs (model specs, back end, limits) as
	// the application encodes it; never secrets.
	Settings json.RawMessage `json:"settings,omitempty"`
	// Report is the finished report as a JSON document, when there is one.
	Report json.RawMessage `json:"report,omitempty"`
}

// Effective is the status of the run as it stands: a run stored as running
// whose process is gone — killed, crashed, its machine rebooted — is
// interrupted. alive reports whether the process of a host and pid may still
// be running (Alive, or a fake in tests). Because the process of another
// machine cannot be checked, a running run whose Host is not this machine is
// also interrupted once it has not been updated for StaleAfter.
// Other statuses, queued among them, are as stored: no process works on
// such a run.
func (r *Run) Effective(now time.Time, alive func(host string, pid int) bool) Status {
	if r.Status != StatusRunning {
		return r.Status
	}
	if !alive(r.Host, r.PID) {
		return StatusInterrupted
	}
	last := r.Updated
	if last.Before(r.Started) {
		last = r.Started
	}
	if now.Sub(last) > StaleAfter && !isLocal(r.Host) {
		return StatusInterrupted
	}
	return StatusRunning
}

// Duration is how long the run took: Ended-Started; now-Started while it is
// running (Effective, with alive); and for a run that stopped without
// recording an end — killed, or paused for an answer — or that waits in a
// queue, until its last update, not until now. It is never negative.
func (r *Run) Duration(now time.Time, alive func(host string, pid int) bool) time.Duration {
	end := r.Ended
	if end.IsZero() {
		end = now
		if r.Effective(now, alive) != StatusRunning {
			end = r.Updated
		}
	}
	return max(end.Sub(r.Started), 0)
}

// idAlphabet is Crockford's base32 alphabet in lower case without i, l, o
// and u: no two of its characters are easily confused.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// NewID returns a new random run id: 8 characters of 0-9 and a-z without i,
// l, o and u (40 random bits). Ids may collide once a store holds many
// thousands of runs; Create then fails with ErrExists and the caller draws
// another.
func NewID() string {
	var b [5]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	v := uint64(b[0])<<32 | uint64(b[1])<<24 | uint64(b[2])<<16 | uint64(b[3])<<8 | uint64(b[4])
	id := make([]byte, 8)
	for i := range id {
		id[len(id)-1-i] = idAlphabet[v&31]
		v >>= 5
	}
	return string(id)
}

// ListOptions select the runs List returns.
type ListOptions struct {
	// Limit caps the number of runs; 0 (or less) returns them all.
	Limit int
	// Offset skips that many runs of the order first, for paging; 0 (or
	// less) skips none.
	Offset int
	// Kind, when set, keeps the runs of that kind.
	Kind Kind
	// Thread, when set, keeps the runs of that thread.
	Thread string
}

// Thread is a conversation: the runs that share a graph thread (Run.Thread
// is its ID). Create records the thread of each new run, so every run's
// thread has one, and CreateThread makes one that has no runs yet.
type Thread struct {
	// ID names the thread, like a run's (NewID); Run.Thread refers to it.
	ID string `json:"id"`
	// Kind is the kind of its first run; "" while it has none.
	Kind Kind `json:"kind,omitempty"`
	// Title is its first run's question, unless it was created with one;
	// stored as valid UTF-8 without NUL.
	Title string `json:"title,omitempty"`
	// Created is when the thread was created.
	Created time.Time `json:"created"`
	// Updated is when its newest run was created (Created while it has
	// none).
	Updated time.Time `json:"updated"`
	// Runs is how many runs it has, filled when read (CreateThread ignores
	// it).
	Runs int `json:"runs"`
	// Data is a JSON document the application keeps with the thread
	// (research serve: the Agent Server API's record of it, with its
	// metadata), at most MaxDocumentBytes; nil when it has none. It is
	// written by CreateThread and SetThreadData, stored verbatim.
	Data json.RawMessage `json:"data,omitempty"`
}

// ThreadListOptions select the threads ListThreads returns.
type ThreadListOptions struct {
	// Limit caps the number of threads; 0 (or less) returns them all.
	Limit int
	// Offset skips that many threads of the order first, for paging; 0 (or
	// less) skips none.
	Offset int
}

// Store is the registry of runs. Its implementations, OpenSQLite and
// OpenPostgres, behave identically and are safe for concurrent use, also by
// several processes on one database.
type Store interface {
	// Create stores a new run and records its thread in the same
	// transaction: a thread that has no row yet gets one (Kind and Title
	// from the run, Created and Updated its Started); one that has gets
	// Updated moved to the run's Started when that is later, and its Kind
	// and Title filled in when they are still empty. It fails with
	// ErrExists when the id is taken and with ErrInvalid when the run lacks
	// an id, a thread, a kind, a status or a start time, or has malformed
	// Settings or Report.
	Create(ctx context.Context, r *Run) error
	// Update overwrites the stored run with r's ID with every field of r
	// except Started, Kind and Thread, which stay as created. It fails with
	// ErrNotFound when there is no such run.
	Update(ctx context.Context, r *Run) error
	// Put stores r without reading the stored run first: a new ID as
	// Create stores it; a stored one as Update overwrites it, but for
	// Tokens, Calls, Cost and Report, which stay as stored — a run's own
	// progress writes them, with SetSpending and SetReport, so that the
	// writes of its status and those of its spending need no order between
	// them. It fails as Create and Update do.
	Put(ctx context.Context, r *Run) error
	// SetSpending writes what the run with exactly the id has spent so far
	// (Tokens, Calls and Cost, nil when unknown), and nothing else. It fails
	// with ErrNotFound when there is no such run.
	SetSpending(ctx context.Context, id string, tokens int64, calls int, cost *float64) error
	// SetReport writes the run's Report (nil removes it), and nothing
	// else. It fails with ErrNotFound when there is no such run, and with
	// ErrInvalid or ErrTooLarge when report is not a JSON document of at
	// most MaxDocumentBytes.
	SetReport(ctx context.Context, id string, report json.RawMessage) error
	// Get returns the whole run with the id, or with the one id that
	// starts with it when it has at least MinPrefix characters. Ids are
	// case-sensitive. It fails with ErrNotFound, or ErrAmbiguous listing
	// the matching ids.
	Get(ctx context.Context, id string) (*Run, error)
	// List returns runs newest first (by Started, then by ID), without
	// Settings and Report.
	List(ctx context.Context, opts ListOptions) ([]*Run, error)
	// Delete removes the run with exactly the id, and its calls. Its
	// thread stays, even when it has no runs left (DeleteThread removes
	// it). It fails with ErrNotFound when there is no such run.
	Delete(ctx context.Context, id string) error
	// Prune removes the runs started before before that are neither
	// running (Effective with Alive: a run of a live process is never
	// removed) nor queued, with their calls, and the threads it removed
	// all the runs of. It returns the runs, newest first, without Settings
	// and Report.
	Prune(ctx context.Context, before time.Time) ([]*Run, error)
	// ThreadRuns returns the runs of a thread oldest first, the order of
	// the conversation, without Settings and Report.
	ThreadRuns(ctx context.Context, thread string) ([]*Run, error)

	// CreateThread stores a new thread with no runs. It fails with
	// ErrExists when the id is taken (by a thread, also one that Create
	// recorded for a run) and with ErrInvalid when the thread lacks an id
	// or a creation time, or has an unknown Kind. A zero Updated is stored
	// as Created.
	CreateThread(ctx context.Context, t *Thread) error
	// GetThread returns the thread with exactly the id. It fails with
	// ErrNotFound when there is none.
	GetThread(ctx context.Context, id string) (*Thread, error)
	// ListThreads returns threads most recently updated first (by Updated,
	// then by ID); none gives an empty slice (not nil).
	ListThreads(ctx context.Context, opts ThreadListOptions) ([]*Thread, error)
	// SetThreadData replaces the Data of the thread with exactly the id
	// (nil removes it). It fails with ErrNotFound when there is no such
	// thread, and with ErrInvalid or ErrTooLarge when data is not a JSON
	// document of at most MaxDocumentBytes.
	SetThreadData(ctx context.Context, id string, data json.RawMessage) error
	// PutThreadData stores t's Data in one statement, reading nothing: a
	// new thread as CreateThread stores it; a stored one gets t's Data,
	// the rest as stored. It fails as CreateThread and SetThreadData do,
	// but never with ErrExists or ErrNotFound.
	PutThreadData(ctx context.Context, t *Thread) error
	// DeleteThread removes the thread with exactly the id, all its runs and
	// their calls. It fails with ErrNotFound when there is neither a
	// thread nor a run of the thread.
	DeleteThread(ctx context.Context, id string) error

	// Claim is Update for a process taking a run up (resuming it, or a
	// worker starting a queued run): it overwrites the stored run only
	// while its Status, Host and PID are still those of seen, the run as
	// the caller read it, in one statement. Of two processes claiming a run
	// they both read, one wins; the other gets ErrClaimed and must leave
	// the run alone. It fails with ErrNotFound when there is no such run.
	Claim(ctx context.Context, r *Run, seen *Run) error

	// RecordCall keeps the result of an external call the run paid for — a
	// search, a page read — under key, which names the call and its
	// arguments (1 to MaxCallKeyBytes bytes), so that the run, resumed,
	// reuses it instead of paying again (Call). data is a JSON document of
	// at most MaxDocumentBytes. A key already recorded keeps its first
	// result. The calls go with their run (Delete, DeleteThread, Prune).
	// It fails with ErrNotFound when there is no such run.
	RecordCall(ctx context.Context, runID, key string, data []byte) error
	// Call returns the result RecordCall kept for the run's call key. It
	// fails with ErrNotFound when there is none.
	Call(ctx context.Context, runID, key string) ([]byte, error)
}
