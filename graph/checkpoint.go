package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Checkpointer stores a graph's progress per thread so that a run can be
// resumed after a failure (and, later, after an interrupt) and inspected. It
// deals only in JSON: the graph encodes its state and updates with
// encoding/json and decodes them back into its own Go types, never into
// arbitrary objects, so a stored checkpoint cannot make the program build
// types it did not ask for.
//
// The engine calls Put once per run for the input and once after every
// completed step, and PutWrites as each task of a step finishes, so that a
// failure mid-step loses only the tasks that had not finished. Implementations
// must be safe for concurrent use: PutWrites is called from parallel tasks.
type Checkpointer interface {
	// Put stores a checkpoint as the newest of its thread.
	Put(ctx context.Context, cp *Checkpoint) error
	// PutWrites records finished tasks of the step that follows checkpoint id.
	PutWrites(ctx context.Context, thread, id string, writes ...TaskWrite) error
	// Get returns the checkpoint id of thread — the newest when id is "" — with
	// the writes recorded for it. It returns ErrCheckpointNotFound when there
	// is none.
	Get(ctx context.Context, thread, id string) (*Checkpoint, error)
	// List returns the thread's checkpoints, newest first, at most limit of
	// them (all when limit ≤ 0), without their writes.
	List(ctx context.Context, thread string, limit int) ([]*Checkpoint, error)
	// DeleteThread removes every checkpoint and write of a thread.
	DeleteThread(ctx context.Context, thread string) error
}

// ErrCheckpointNotFound is returned by Checkpointer.Get for a missing checkpoint.
var ErrCheckpointNotFound = errors.New("graph: checkpoint not found")

// Checkpoint is the state of a thread between two steps.
type Checkpoint struct {
	Thread string `json:"thread"`
	ID     string `json:"id"`
	Parent string `json:"parent,omitempty"` // the checkpoint this one follows
	// Step is the number of steps completed in this run (0: just the input).
	Step int `json:"step"`
	// State is the JSON encoding of the state struct.
	State json.RawMessage `json:"state"`
	// Next are the tasks of the next step, in task order; empty when the run
	// has finished.
	Next []PendingTask `json:"next,omitempty"`
	// Joins records the progress of waiting edges (AddJoin).
	Joins []JoinProgress `json:"joins,omitempty"`
	// Writes are the finished tasks of Next, as recorded by PutWrites; Get
	// fills them in.
	Writes  []TaskWrite `json:"writes,omitempty"`
	Created time.Time   `json:"created"`
}

// PendingTask is a task of a checkpoint's next step.
type PendingTask struct {
	Node string          `json:"node"`
	Arg  json.RawMessage `json:"arg,omitempty"` // the Send payload of a task node
}

// TaskWrite is the update of a finished task.
type TaskWrite struct {
	Task   int             `json:"task"` // index into the checkpoint's Next
	Node   string          `json:"node"`
	Update json.RawMessage `json:"update"`
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
	writes  map[string][]TaskWrite // by thread + "\x00" + checkpoint id
}

// NewMemorySaver returns an empty MemorySaver.
func NewMemorySaver() *MemorySaver {
	return &MemorySaver{threads: map[string][]*Checkpoint{}, writes: map[string][]TaskWrite{}}
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
	m.threads[cp.Thread] = append(m.threads[cp.Thread], c)
	return nil
}

// PutWrites implements Checkpointer.
func (m *MemorySaver) PutWrites(ctx context.Context, thread, id string, writes ...TaskWrite) error {
	k := thread + "\x00" + id
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range writes {
		w.Update = slices.Clone(w.Update)
		m.writes[k] = append(m.writes[k], w)
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
				w.Update = slices.Clone(w.Update)
				c.Writes = append(c.Writes, w)
			}
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
	c.Writes = slices.Clone(cp.Writes)
	return &c
}
