package graph

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Checkpointer stores a graph's progress per thread so that a run can be
// resumed after a failure, a crash or an interrupt, inspected, and branched
// from an earlier point. It deals only in JSON: the graph encodes its state
// and updates with encoding/json and decodes them back into its own Go types,
// never into arbitrary objects, so a stored checkpoint cannot make the
// program build types it did not ask for.
//
// The engine follows the "local message table" rule: a step's merged state
// and the tasks it schedules next are one Put (one commit), and each task's
// outcome is one PutWrites as the task finishes, so a crash loses only the
// tasks that were still running. Implementations must be safe for
// concurrent use — PutWrites is called from parallel tasks — and, to be
// shared by several processes, must make Put atomic:
//
//   - Put stores cp as the newest checkpoint of cp.Thread only if the
//     thread's newest checkpoint is still cp.Parent (none when Parent is "").
//     Otherwise another writer moved the thread on, and Put returns a
//     *ConflictingCheckpointError (errors.Is ErrCheckpointConflict) and
//     stores nothing. A checkpoint whose Source is SourceFork starts a branch
//     from an older checkpoint: its Parent must exist but need not be the
//     newest.
//   - PutWrites records task outcomes of the step after checkpoint id; a
//     later record for the same task index replaces the earlier one.
//
// checkpointtest.Run is the conformance suite every store passes.
type Checkpointer interface {
	// Put stores a checkpoint as the newest of its thread (see above).
	Put(ctx context.Context, cp *Checkpoint) error
	// PutWrites records task outcomes of the step that follows checkpoint id.
	PutWrites(ctx context.Context, thread, id string, writes ...TaskWrite) error
	// Get returns the checkpoint id of thread — the newest when id is "" — with
	// the task records of its step, in task order. It returns
	// ErrCheckpointNotFound when there is none.
	Get(ctx context.Context, thread, id string) (*Checkpoint, error)
	// List returns the thread's checkpoints, newest first, at most limit of
	// them (all when limit ≤ 0), without their writes.
	List(ctx context.Context, thread string, limit int) ([]*Checkpoint, error)
	// DeleteThread removes every checkpoint and write of a thread.
	DeleteThread(ctx context.Context, thread string) error
}

// ErrCheckpointNotFound is returned by Checkpointer.Get for a missing checkpoint.
var ErrCheckpointNotFound = errors.New("graph: checkpoint not found")

// ErrCheckpointConflict matches a *ConflictingCheckpointError: another writer
// stored a checkpoint of the thread first.
var ErrCheckpointConflict = errors.New("graph: the thread was changed by another writer")

// ConflictingCheckpointError is Put's refusal of a checkpoint whose parent is
// no longer the newest of its thread: two runs continued one thread at once,
// and this one lost. Nothing was stored; the thread stays as the winner left
// it.
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
	return fmt.Sprintf("graph: thread %q was changed by another run: this run continued checkpoint %s, but the newest is now %s; only one run may continue a thread at a time — load its state again before going on",
		e.Thread, parent, newest)
}

func (e *ConflictingCheckpointError) Is(target error) bool { return target == ErrCheckpointConflict }

// CheckpointFormat is the version of the Checkpoint encoding this package
// writes and the newest it reads.
const CheckpointFormat = 1

// DefaultMaxCheckpointBytes bounds the encoded state, a Send payload and a
// task's update that a run writes to or reads from a checkpointer, unless
// WithMaxCheckpointBytes says otherwise.
const DefaultMaxCheckpointBytes = 64 << 20

// Checkpoint is the state of a thread between two steps.
type Checkpoint struct {
	// Format is the encoding's version (CheckpointFormat when written).
	Format int    `json:"format"`
	Thread string `json:"thread"`
	ID     string `json:"id"`
	Parent string `json:"parent,omitempty"` // the checkpoint this one follows
	// Step is the number of steps completed in the run that wrote it (0:
	// just the run's input).
	Step int `json:"step"`
	// State is the JSON encoding of the state struct.
	State json.RawMessage `json:"state"`
	// Next are the tasks of the next step, in task order; empty when the run
	// has finished.
	Next []PendingTask `json:"next,omitempty"`
	// Joins records the progress of waiting edges (AddJoin).
	Joins []JoinProgress `json:"joins,omitempty"`
	// Writes are the task records of Next's step, as stored by PutWrites; Get
	// fills them in.
	Writes  []TaskWrite `json:"writes,omitempty"`
	Created time.Time   `json:"created"`
	// Source says what wrote the checkpoint.
	Source CheckpointSource `json:"source"`
	// Ran lists the nodes whose tasks ran in the step that led here, in task
	// order, each once — or the node an UpdateState wrote as.
	Ran []string `json:"ran,omitempty"`
	// Run is the run's id, when it was given with RunID.
	Run string `json:"run,omitempty"`
}

// CheckpointSource says what wrote a checkpoint.
type CheckpointSource string

// The sources of checkpoints.
const (
	SourceInput  CheckpointSource = "input"  // a run's input, before its first step
	SourceLoop   CheckpointSource = "loop"   // the end of a step
	SourceUpdate CheckpointSource = "update" // UpdateState
	// SourceFork: the first checkpoint of a branch started from an older
	// checkpoint (a run or an UpdateState from it).
	SourceFork CheckpointSource = "fork"
)

// PendingTask is a task of a checkpoint's next step.
type PendingTask struct {
	Node string          `json:"node"`
	Arg  json.RawMessage `json:"arg,omitempty"` // the Send payload of a task node
}

// TaskWrite is what is known of one task of the step after a checkpoint:
//
//   - finished: Update holds its update;
//   - stopped by Interrupt: Interrupts lists what it waits for, and Answers
//     holds the answers given so far (answers to interrupts still listed are
//     waiting to be used by the task's next run);
//   - neither: the task was released from a breakpoint (InterruptBefore or
//     InterruptAfter) and may run.
type TaskWrite struct {
	Task       int                `json:"task"` // index into the checkpoint's Next
	Node       string             `json:"node"`
	Update     json.RawMessage    `json:"update,omitempty"`
	Interrupts []PendingInterrupt `json:"interrupts,omitempty"`
	Answers    []AnswerRecord     `json:"answers,omitempty"`
}

// Finished reports whether the task finished (its update is recorded).
func (w TaskWrite) Finished() bool { return len(w.Update) > 0 }

// AnswerRecord is a stored answer to one interrupt.
type AnswerRecord struct {
	ID    string          `json:"id"` // the Interrupt's ID
	Value json.RawMessage `json:"value"`
}

// JoinProgress lists which sources of a waiting edge into To have run.
type JoinProgress struct {
	To   string   `json:"to"`
	Seen []string `json:"seen"`
}

// Done reports whether the run that wrote cp had finished.
func (cp *Checkpoint) Done() bool { return len(cp.Next) == 0 }

// MemorySaver is an in-memory Checkpointer, for tests and for runs that need
// resumption only within one process.
type MemorySaver struct {
	mu      sync.Mutex
	threads map[string][]*Checkpoint
	writes  map[string]map[int]TaskWrite // by thread + "\x00" + checkpoint id, then task
}

// NewMemorySaver returns an empty MemorySaver.
func NewMemorySaver() *MemorySaver {
	return &MemorySaver{threads: map[string][]*Checkpoint{}, writes: map[string]map[int]TaskWrite{}}
}

// Put implements Checkpointer.
func (m *MemorySaver) Put(ctx context.Context, cp *Checkpoint) error {
	if cp == nil || cp.Thread == "" || cp.ID == "" {
		return fmt.Errorf("graph: MemorySaver.Put: checkpoint needs a thread and an id")
	}
	c := cloneCheckpoint(cp)
	c.Writes = nil
	m.mu.Lock()
	defer m.mu.Unlock()
	cps := m.threads[cp.Thread]
	if slices.ContainsFunc(cps, func(x *Checkpoint) bool { return x.ID == cp.ID }) {
		return fmt.Errorf("graph: MemorySaver.Put: thread %q already has checkpoint %s", cp.Thread, cp.ID)
	}
	newest := ""
	if len(cps) > 0 {
		newest = cps[len(cps)-1].ID
	}
	switch {
	case cp.Source == SourceFork && cp.Parent != "":
		if !slices.ContainsFunc(cps, func(x *Checkpoint) bool { return x.ID == cp.Parent }) {
			return fmt.Errorf("graph: MemorySaver.Put: fork of thread %q from checkpoint %s, which it does not have", cp.Thread, cp.Parent)
		}
	case cp.Parent != newest:
		return &ConflictingCheckpointError{Thread: cp.Thread, Parent: cp.Parent, Newest: newest}
	}
	m.threads[cp.Thread] = append(cps, c)
	return nil
}

// PutWrites implements Checkpointer.
func (m *MemorySaver) PutWrites(ctx context.Context, thread, id string, writes ...TaskWrite) error {
	k := thread + "\x00" + id
	m.mu.Lock()
	defer m.mu.Unlock()
	byTask := m.writes[k]
	if byTask == nil {
		byTask = map[int]TaskWrite{}
		m.writes[k] = byTask
	}
	for _, w := range writes {
		byTask[w.Task] = cloneWrite(w)
	}
	return nil
}

// Get implements Checkpointer.
func (m *MemorySaver) Get(ctx context.Context, thread, id string) (*Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cps := m.threads[thread]
	for i := len(cps) - 1; i >= 0; i-- {
		if id == "" || cps[i].ID == id {
			c := cloneCheckpoint(cps[i])
			for _, w := range m.writes[thread+"\x00"+c.ID] {
				c.Writes = append(c.Writes, cloneWrite(w))
			}
			slices.SortFunc(c.Writes, func(a, b TaskWrite) int { return cmp.Compare(a.Task, b.Task) })
			return c, nil
		}
	}
	return nil, ErrCheckpointNotFound
}

// List implements Checkpointer.
func (m *MemorySaver) List(ctx context.Context, thread string, limit int) ([]*Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cps := m.threads[thread]
	var out []*Checkpoint
	for i := len(cps) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		out = append(out, cloneCheckpoint(cps[i]))
	}
	return out, nil
}

// DeleteThread implements Checkpointer.
func (m *MemorySaver) DeleteThread(ctx context.Context, thread string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, cp := range m.threads[thread] {
		delete(m.writes, thread+"\x00"+cp.ID)
	}
	delete(m.threads, thread)
	return nil
}

func cloneCheckpoint(cp *Checkpoint) *Checkpoint {
	c := *cp
	c.State = slices.Clone(cp.State)
	c.Next = make([]PendingTask, len(cp.Next))
	for i, t := range cp.Next {
		c.Next[i] = PendingTask{Node: t.Node, Arg: slices.Clone(t.Arg)}
	}
	c.Joins = make([]JoinProgress, len(cp.Joins))
	for i, j := range cp.Joins {
		c.Joins[i] = JoinProgress{To: j.To, Seen: slices.Clone(j.Seen)}
	}
	c.Writes = nil
	for _, w := range cp.Writes {
		c.Writes = append(c.Writes, cloneWrite(w))
	}
	c.Ran = slices.Clone(cp.Ran)
	return &c
}

func cloneWrite(w TaskWrite) TaskWrite {
	w.Update = slices.Clone(w.Update)
	w.Interrupts = slices.Clone(w.Interrupts)
	for i := range w.Interrupts {
		w.Interrupts[i].Payload = slices.Clone(w.Interrupts[i].Payload)
	}
	w.Answers = slices.Clone(w.Answers)
	for i := range w.Answers {
		w.Answers[i].Value = slices.Clone(w.Answers[i].Value)
	}
	return w
}
