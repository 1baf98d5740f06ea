package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Checkpointer stores a graph's progress per thread so that a run can be
// resumed after a failure, a crash or an interrupt, inspected, and branched
// from an earlier point. It deals only in JSON: the graph encodes its state
// and updates with encoding/json and decodes them back into its own Go types,
// never into arbitrary objects, so a stored checkpoint cannot make the
// program build types it did not ask for.
//
// A thread holds lines of checkpoints, one per namespace: "" for the graph
// the run started, and one for each subgraph task ("node:task-id", nested
// as "outer:id|inner:id"). Checkpoint IDs are unique within a thread,
// whatever their namespace.
//
// The engine follows the "local message table" rule: a step's merged state
// and the tasks it schedules next are one Put (one commit), and each task's
// outcome is one PutWrites as the task finishes, so a crash loses only the
// tasks that were still running. Implementations must be safe for
// concurrent use — PutWrites is called from parallel tasks — and, to be
// shared by several processes, must make each call atomic:
//
//   - Put stores cp as the newest checkpoint of its thread's namespace
//     cp.Namespace, together with its task records (cp.Writes) and the
//     channel values it introduces (cp.Values), only if the namespace's
//     newest checkpoint is still cp.Parent (none when Parent is ""); else
//     it returns a *ConflictingCheckpointError and stores nothing. A
//     checkpoint whose Source is SourceFork starts a branch from an older
//     checkpoint: its Parent must exist but need not be the newest.
//   - PutWrites records task outcomes of the step after checkpoint at; a
//     later record for the same task index replaces the earlier one. It
//     refuses records for a checkpoint the thread does not have (the thread
//     was deleted under a late task), so no record outlives its checkpoint.
//   - Get and List return checkpoints with their task records and the
//     value of every channel their Versions name.
//
// Leases make a run the only writer of its thread (see TakeThread): Put and
// PutWrites refuse, with a *ThreadBusyError, a write by any other run than
// the holder of a live lease; DeleteThread refuses a thread with a live
// lease.
//
// checkpointtest.Run is the conformance suite every store passes.
type Checkpointer interface {
	// Put stores a checkpoint as the newest of its namespace (see above).
	Put(ctx context.Context, cp *Checkpoint) error
	// PutWrites records task outcomes of the step that follows checkpoint
	// at (at.Checkpoint, required), written by run.
	PutWrites(ctx context.Context, at Ref, run string, writes ...TaskWrite) error
	// Get returns the checkpoint at names — the newest of at.Namespace when
	// at.Checkpoint is "" — with the task records of its step, in task
	// order, and its channel values. It returns ErrCheckpointNotFound when
	// there is none.
	Get(ctx context.Context, at Ref) (*Checkpoint, error)
	// List returns the checkpoints of at.Thread in namespace at.Namespace,
	// newest first, each with its task records and channel values: those
	// stored before checkpoint at.Checkpoint when it is set (to page), at
	// most limit of them (all when limit ≤ 0).
	List(ctx context.Context, at Ref, limit int) ([]*Checkpoint, error)
	// DeleteThread removes every checkpoint, task record and channel value
	// of a thread, in every namespace. It refuses a thread a run holds
	// (*ThreadBusyError); deleting a missing thread is not an error.
	DeleteThread(ctx context.Context, thread string) error
	// Prune deletes the checkpoints of a thread that p selects, with their
	// task records and the channel values no remaining checkpoint refers
	// to, and returns how many checkpoints it deleted.
	Prune(ctx context.Context, thread string, p Prune) (int, error)
	// TakeThread gives the thread to run until ttl from now: a new lease,
	// or the renewal of run's own. Another run's live lease makes it fail
	// with a *ThreadBusyError (errors.Is ErrThreadBusy) and change nothing;
	// an expired one is taken over. The lease returned says whether
	// someone asked run to stop (StopThread).
	TakeThread(ctx context.Context, thread, run string, ttl time.Duration) (Lease, error)
	// ReleaseThread ends run's lease of the thread; it does nothing when
	// run does not hold it.
	ReleaseThread(ctx context.Context, thread, run string) error
	// StopThread asks the holder of the thread's live lease to stop: its
	// next TakeThread renewal reports Stop. It returns the lease (the zero
	// Lease when the thread is free).
	StopThread(ctx context.Context, thread string) (Lease, error)
}

// Lease is a run's hold on a thread (Checkpointer.TakeThread).
type Lease struct {
	Thread string
	Run    string    // the run holding it
	Until  time.Time // when it expires unless renewed
	// Stop says another caller asked the holder to stop (StopThread).
	Stop bool
}

// Prune selects checkpoints of a thread to delete (Checkpointer.Prune). A
// checkpoint is deleted when any rule selects it; KeepLast and Before never
// select the newest checkpoint of a namespace.
type Prune struct {
	// KeepLast, when positive, keeps the newest KeepLast checkpoints of
	// each namespace and deletes the others.
	KeepLast int
	// Before, when set, deletes the checkpoints created before it.
	Before time.Time
	// Run, when set, deletes every checkpoint that run wrote, in every
	// namespace: a rollback of the run.
	Run string
}

// ErrCheckpointNotFound is returned by Checkpointer.Get for a missing checkpoint.
var ErrCheckpointNotFound = errors.New("graph: checkpoint not found")

// ErrCheckpointConflict matches a *ConflictingCheckpointError: another writer
// stored a checkpoint of the thread first.
var ErrCheckpointConflict = errors.New("graph: the thread was changed by another writer")

// ErrThreadBusy matches a *ThreadBusyError: another run holds the thread.
var ErrThreadBusy = errors.New("graph: the thread is busy with another run")

// ThreadBusyError is the refusal of a write, a run or a deletion on a
// thread another run holds (Checkpointer.TakeThread).
type ThreadBusyError struct {
	Thread string
	Run    string    // the run holding the thread
	Until  time.Time // when its lease expires unless renewed
}

func (e *ThreadBusyError) Error() string {
	return fmt.Sprintf("graph: thread %q is busy: run %s holds it (lease until %s); nothing was written — wait for that run to end, or run with graph.OnBusy to queue behind it or stop it",
		e.Thread, e.Run, e.Until.UTC().Format(time.RFC3339))
}

func (e *ThreadBusyError) Is(target error) bool { return target == ErrThreadBusy }

// ConflictingCheckpointError is Put's refusal of a checkpoint whose parent is
// no longer the newest of its namespace: the thread was moved on by a write
// outside this run's lease (an UpdateState, or a writer that takes no
// lease). Nothing was stored; the thread stays as the other writer left it.
type ConflictingCheckpointError struct {
	Thread string
	Parent string // the checkpoint the refused one follows
	Newest string // the thread's newest checkpoint ("" when it has none)
}

func (e *ConflictingCheckpointError) Error() string {
	newest := e.Newest
	if newest == "" {
		newest = "none"
	}
	parent := e.Parent
	if parent == "" {
		parent = "none (a new thread)"
	}
	return fmt.Sprintf("graph: thread %q was changed by another writer: this write continued checkpoint %s, but the newest is now %s; read the thread's state (State) before going on, rather than repeating the run, whose input may be stored already",
		e.Thread, parent, newest)
}

func (e *ConflictingCheckpointError) Is(target error) bool { return target == ErrCheckpointConflict }

// CheckpointFormat is the version of the Checkpoint encoding this package
// writes and the newest it reads. Format 1 kept the whole state in State;
// format 2 keeps it in channels, one per field (Versions and Values).
const CheckpointFormat = 2

// DefaultMaxCheckpointBytes bounds the encoded state, a Send payload and a
// task's update that a run writes to or reads from a checkpointer, unless
// WithMaxCheckpointBytes says otherwise.
const DefaultMaxCheckpointBytes = 64 << 20

// Checkpoint is the state of a thread between two steps.
type Checkpoint struct {
	// Format is the encoding's version (CheckpointFormat when written).
	Format int    `json:"format"`
	Thread string `json:"thread"`
	// Namespace is the line of checkpoints it belongs to: "" for the run's
	// own graph, "node:task-id" for a subgraph run by that task.
	Namespace string `json:"ns,omitempty"`
	ID        string `json:"id"`
	Parent    string `json:"parent,omitempty"` // the checkpoint this one follows
	// Step is the number of steps completed in the run that wrote it (0:
	// just the run's input).
	Step int `json:"step"`
	// State is the JSON encoding of the whole state struct, in a checkpoint
	// of format 1; empty in format 2, where the state is in channels.
	State json.RawMessage `json:"state,omitempty"`
	// Versions names, per channel, the version of its value at this
	// checkpoint: a channel is one field of the state (by its JSON name),
	// or RestChannel for the fields without a handle. A version is written
	// once and shared by every later checkpoint until the field changes.
	Versions map[string]string `json:"versions,omitempty"`
	// Values are channel values: in Put, those whose version this
	// checkpoint introduces (the store keeps them); from Get and List, the
	// value of every channel of Versions.
	Values []ChannelValue `json:"-"`
	// Next are the tasks of the next step, in task order; empty when the run
	// has finished.
	Next []PendingTask `json:"next,omitempty"`
	// Joins records the progress of waiting edges (AddJoin).
	Joins []JoinProgress `json:"joins,omitempty"`
	// Deferred are the deferred nodes (Defer) waiting for the run's other
	// work to end.
	Deferred []string `json:"deferred,omitempty"`
	// Writes are the task records of Next's step: stored with the
	// checkpoint by Put and later by PutWrites; Get and List fill them in.
	Writes  []TaskWrite `json:"-"`
	Created time.Time   `json:"created"`
	// Source says what wrote the checkpoint.
	Source CheckpointSource `json:"source"`
	// Ran lists the nodes whose tasks ran in the step that led here, in task
	// order, each once — or the node an UpdateState wrote as.
	Ran []string `json:"ran,omitempty"`
	// Run is the run that wrote it (RunID, or an ID the run made).
	Run string `json:"run,omitempty"`
}

// RestChannel is the channel of the state's fields that have no handle
// (they change only with a run's input).
const RestChannel = "__rest__"

// ChannelValue is one version of one channel's value, as JSON.
type ChannelValue struct {
	Channel string          `json:"channel"`
	Version string          `json:"version"`
	Value   json.RawMessage `json:"value"`
}

// CheckpointSource says what wrote a checkpoint.
type CheckpointSource string

// The sources of checkpoints.
const (
	SourceInput  CheckpointSource = "input"  // a run's input, before its first step
	SourceLoop   CheckpointSource = "loop"   // the end of a step
	SourceUpdate CheckpointSource = "update" // UpdateState, or a Resume's Command
	// SourceFork: the first checkpoint of a branch started from an older
	// checkpoint (a run or an UpdateState from it).
	SourceFork CheckpointSource = "fork"
)

// PendingTask is a task of a checkpoint's next step.
type PendingTask struct {
	// ID identifies the task in its thread: its interrupts and its
	// subgraph's namespace derive from it, so it is kept when an update
	// carries the task over to a new checkpoint. Empty in checkpoints
	// written before IDs existed.
	ID   string          `json:"id,omitempty"`
	Node string          `json:"node"`
	Arg  json.RawMessage `json:"arg,omitempty"` // the Send payload of a task node
}

// TaskWrite is what is known of one task of the step after a checkpoint:
//
//   - finished: Update holds its update;
//   - failed: Err says why (it runs again on Resume);
//   - stopped by Interrupt: Interrupts lists what it asked, and Answers the
//     answers given so far (answers to interrupts still listed are waiting
//     to be used by the task's next run);
//   - none of these: the task was released from a breakpoint (InterruptBefore
//     or InterruptAfter) and may run.
//
// A finished task keeps the interrupts it raised on its way and their
// answers, so that History shows what was asked and answered.
type TaskWrite struct {
	Task       int                `json:"task"` // index into the checkpoint's Next
	Node       string             `json:"node"`
	Update     json.RawMessage    `json:"update,omitempty"`
	Err        string             `json:"error,omitempty"`
	Interrupts []PendingInterrupt `json:"interrupts,omitempty"`
	Answers    []AnswerRecord     `json:"answers,omitempty"`
	// Subgraphs are the namespaces of the subgraph runs the task made.
	Subgraphs []string `json:"subgraphs,omitempty"`
	// Time is when the record was made.
	Time time.Time `json:"time,omitzero"`
	// Cached: Update came from the node cache (WithCachePolicy); the node
	// did not run.
	Cached bool `json:"cached,omitempty"`
}

// Finished reports whether the task finished (its update is recorded).
func (w TaskWrite) Finished() bool { return len(w.Update) > 0 }

// AnswerRecord is a stored answer to one interrupt.
type AnswerRecord struct {
	ID    string          `json:"id"` // the Interrupt's ID
	Value json.RawMessage `json:"value"`
	Time  time.Time       `json:"time,omitzero"` // when it was given
}

// JoinProgress lists which sources of a waiting edge into To have run.
type JoinProgress struct {
	To   string   `json:"to"`
	Seen []string `json:"seen"`
}

// Done reports whether the run that wrote cp had finished.
func (cp *Checkpoint) Done() bool { return len(cp.Next) == 0 && len(cp.Deferred) == 0 }

// Ref returns the reference to cp.
func (cp *Checkpoint) Ref() Ref {
	return Ref{Thread: cp.Thread, Namespace: cp.Namespace, Checkpoint: cp.ID}
}

// StateJSON is the whole state at the checkpoint as one JSON object, the
// same as encoding the state struct: State in format 1; in format 2 the
// channels (as Get and List return them) put together. It is for readers
// without the state's Go type — a server showing a thread's values; with
// the type, Compiled.State decodes it.
func (cp *Checkpoint) StateJSON() (json.RawMessage, error) {
	if len(cp.State) > 0 || len(cp.Versions) == 0 {
		return cp.State, nil
	}
	if len(cp.Values) != len(cp.Versions) {
		return nil, fmt.Errorf("graph: checkpoint %s of thread %q names %d channels but came with %d values: the store lost some", cp.ID, cp.Thread, len(cp.Versions), len(cp.Values))
	}
	fields := map[string]json.RawMessage{}
	for _, cv := range cp.Values {
		if cv.Channel != RestChannel {
			continue
		}
		if err := json.Unmarshal(cv.Value, &fields); err != nil {
			return nil, fmt.Errorf("graph: checkpoint %s of thread %q: its state is not a JSON object: %w", cp.ID, cp.Thread, err)
		}
	}
	for _, cv := range cp.Values {
		if cv.Channel != RestChannel {
			fields[cv.Channel] = cv.Value
		}
	}
	return json.Marshal(fields)
}
