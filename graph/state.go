package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Snapshot is a thread's state at one checkpoint.
type Snapshot[S any] struct {
	State S
	// Step is the number of steps the run that wrote the checkpoint had
	// completed.
	Step int
	// Next are the nodes of the pending step that have yet to run, in task
	// order; empty when the run finished there.
	Next         []string
	CheckpointID string
	Parent       string // the checkpoint this one follows
	// Namespace is the checkpoint's line in its thread: "" but for a
	// subgraph's (see Ref.In).
	Namespace string
	Created   time.Time
	Source    CheckpointSource
	Ran       []string // nodes of the step that led here, or UpdateState's node
	Run       string   // the run that wrote it
	// Interrupts are what the pending step waits on: the interrupts no one
	// has answered, and breakpoints.
	Interrupts []PendingInterrupt
	// Tasks are the pending step's tasks with what is stored of each: its
	// update or its error, and every interrupt it raised, with its answer
	// once given. In History they show what each step asked, was answered,
	// did and failed at.
	Tasks []TaskState[S]
}

// TaskState is a task of a snapshot's pending step.
type TaskState[S any] struct {
	// ID identifies the task in its thread; a subgraph it ran checkpoints
	// under a namespace named after it (Subgraphs).
	ID   string
	Node string
	Arg  any // the Send payload of a task node
	// Done: the task finished and Update is what it wrote (merged into the
	// state when the whole step has finished).
	Done   bool
	Update Update[S]
	// Err is the error the task failed with, when its last run failed (it
	// runs again on Resume).
	Err string
	// Interrupts are the interrupts the task raised, in order, each with
	// its answer once given.
	Interrupts []InterruptRecord
	// Subgraphs are the namespaces of the subgraphs the task ran: read
	// them with State(ctx, graph.Thread(id).In(ns)) on the subgraph.
	Subgraphs []string
	// Cached: Update came from the node cache (WithCachePolicy); the node
	// did not run.
	Cached bool
}

// Waiting returns the interrupts the task waits on: those without an
// answer, while it has not finished.
func (t TaskState[S]) Waiting() []PendingInterrupt {
	if t.Done {
		return nil
	}
	var out []PendingInterrupt
	for _, ir := range t.Interrupts {
		if ir.Pending() {
			out = append(out, ir.PendingInterrupt)
		}
	}
	return out
}

// InterruptRecord is an interrupt a task raised — what it asked, when, in
// which node and task — with the answer it was given, once given.
type InterruptRecord struct {
	PendingInterrupt
	// Answer is the answer, as JSON; empty while none was given.
	Answer   json.RawMessage
	Answered time.Time
}

// Pending reports whether the interrupt has no answer yet.
func (ir InterruptRecord) Pending() bool { return len(ir.Answer) == 0 }

// Done reports whether the run finished at this checkpoint.
func (s Snapshot[S]) Done() bool { return len(s.Next) == 0 && len(s.Tasks) == 0 }

// State returns the state of a thread at a checkpoint — its newest when
// at.Checkpoint is "" — with the pending step and the interrupts it waits
// on.
//
// As LangGraph's get_state: for the newest, the writes of the pending
// step's tasks that finished — before a failure, a crash or an interrupt
// stopped the step — are applied to State, and Next leaves those tasks
// out: the snapshot shows what a Resume starts from. Tasks lists every task
// of the pending step, finished or not. A checkpoint asked for by ID is
// shown as stored (its State without those writes, Next with every task).
// A subgraph's state is read with at.In(namespace), on the subgraph's own
// compiled graph.
func (c *Compiled[S]) State(ctx context.Context, at Ref) (Snapshot[S], error) {
	r, err := c.reader(ctx, at)
	if err != nil {
		return Snapshot[S]{}, err
	}
	cp, err := r.cp.Get(ctx, at)
	if err != nil {
		if errors.Is(err, ErrCheckpointNotFound) {
			return Snapshot[S]{}, fmt.Errorf("%w: thread %s has no checkpoint%s", err, at, quoted(" ", at.Checkpoint))
		}
		return Snapshot[S]{}, fmt.Errorf("graph: loading thread %s: %w", at, err)
	}
	if err := r.load(cp); err != nil {
		return Snapshot[S]{}, err
	}
	return r.snapshot(cp, at.Checkpoint == ""), nil
}

// History returns a thread's checkpoints, newest first — at most limit of
// them, all when limit ≤ 0 — across every branch, each with its state and
// its pending step's tasks (what they asked and were answered, their
// updates and errors), so that a thread's history can be audited and any
// of its checkpoints forked from (Thread(id).At). With a checkpoint
// (at.At), it lists the checkpoints stored before that one (LangGraph's
// before), to page through a long history; with a namespace (at.In), a
// subgraph's, on the subgraph's own compiled graph.
func (c *Compiled[S]) History(ctx context.Context, at Ref, limit int) ([]Snapshot[S], error) {
	r, err := c.reader(ctx, at)
	if err != nil {
		return nil, err
	}
	cps, err := r.cp.List(ctx, at, limit)
	if err != nil {
		return nil, fmt.Errorf("graph: listing the checkpoints of thread %s: %w", at, err)
	}
	out := make([]Snapshot[S], 0, len(cps))
	for _, cp := range cps {
		r, err := c.reader(ctx, at)
		if err != nil {
			return nil, err
		}
		if err := r.load(cp); err != nil {
			return nil, err
		}
		out = append(out, r.snapshot(cp, false))
	}
	return out, nil
}

// reader is a run for reading or editing what is stored of a thread, in the
// namespace at names.
func (c *Compiled[S]) reader(ctx context.Context, at Ref) (*run[S], error) {
	r, err := c.newRun(ctx, []RunOption{Thread(at.Thread)})
	if err != nil {
		return nil, err
	}
	r.ns, r.save = at.Namespace, nil // a reader's writes (UpdateState) are made at once
	return r, nil
}

// snapshot describes the run, loaded at cp. With current, the writes of
// the pending step's finished tasks are applied to the state, as a Resume
// would see it.
func (r *run[S]) snapshot(cp *Checkpoint, current bool) Snapshot[S] {
	interrupts := r.pending()
	finished := current && slices.ContainsFunc(r.tasks, func(t task[S]) bool { return t.done })
	if finished {
		stored := r.state
		if err := r.merge(); err != nil {
			// The finished writes conflict: Resume will report it; show the
			// state as stored.
			r.state, finished = stored, false
		}
	}
	snap := Snapshot[S]{State: r.state, Step: cp.Step, CheckpointID: cp.ID, Parent: cp.Parent, Namespace: cp.Namespace,
		Created: cp.Created, Source: cp.Source, Ran: cp.Ran, Run: cp.Run, Interrupts: interrupts}
	for i := range r.tasks {
		t := &r.tasks[i]
		ts := TaskState[S]{ID: t.id, Node: t.node.name, Arg: t.arg, Done: t.done, Update: t.upd, Err: t.failed, Subgraphs: t.subgraphs, Cached: t.cached}
		if t.hold != nil {
			for _, pi := range t.hold.pause {
				ir := InterruptRecord{PendingInterrupt: pi}
				for _, a := range t.hold.answers {
					if a.ID == pi.ID {
						ir.Answer, ir.Answered = a.Value, a.Time
					}
				}
				ts.Interrupts = append(ts.Interrupts, ir)
			}
		}
		snap.Tasks = append(snap.Tasks, ts)
		if !finished || !t.done {
			snap.Next = append(snap.Next, t.node.name)
		}
	}
	for _, name := range cp.Deferred {
		snap.Next = append(snap.Next, name)
	}
	return snap
}

func quoted(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + strconv.Quote(s)
}
