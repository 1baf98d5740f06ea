package graph

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"
)

// EventKind says what an Event reports. Kinds are bits, so a set of them
// can be passed to Events.
type EventKind uint8

// The kinds of Event.
const (
	// EventTaskStart: a task is about to run. Node, Task and, for a Send
	// task, Arg are set.
	EventTaskStart EventKind = 1 << iota
	// EventTaskEnd: a task finished. Update holds what it wrote, or Err why
	// it failed. Tasks end in completion order; their updates are merged in
	// task order at the end of the step.
	EventTaskEnd
	// EventStep: a step finished and its updates are merged. State is the
	// state after the step. Like LangGraph's "values" stream, a stream begins
	// with an EventStep for the state the run starts from: Step 0 with the
	// input merged (Stream), or the stored step's state (ResumeStream).
	EventStep
	// EventCustom: a node called Emit. Value is what it emitted; Node is the
	// node, as "outer/inner" for a node of a subgraph.
	EventCustom
	// EventEnd: the run finished. State is the final state.
	EventEnd
	// EventInterrupt: the run paused at interrupts (Interrupts lists them)
	// and waits for Resume. It is the last event of the stream, which ends
	// without an error: pausing is not failing. State is the state before the
	// paused step.
	EventInterrupt
)

func (k EventKind) String() string {
	switch k {
	case EventTaskStart:
		return "task_start"
	case EventTaskEnd:
		return "task_end"
	case EventStep:
		return "step"
	case EventCustom:
		return "custom"
	case EventEnd:
		return "end"
	case EventInterrupt:
		return "interrupt"
	}
	return "unknown"
}

// Event is one item of a run's stream.
type Event[S any] struct {
	Kind   EventKind
	Step   int    // the step the event belongs to (1 is the first)
	Node   string // task and custom events
	Task   int    // index of the task within its step
	Arg    any    // EventTaskStart of a Send task: its payload
	Update Update[S]
	Err    error // EventTaskEnd of a failed task
	State  S     // EventStep, EventEnd and EventInterrupt
	Value  any   // EventCustom
	// Interrupts are what an EventInterrupt waits on.
	Interrupts []PendingInterrupt
}

// Events limits a stream to the given kinds of event (default: all).
func Events(kinds ...EventKind) RunOption {
	return runFunc(func(r *runSettings) {
		for _, k := range kinds {
			r.kinds |= k
		}
	})
}

// Invoke runs the graph from in and returns the final state. The input is
// in's non-zero fields, then the writes of InputWrites: on a continuing
// thread a zero field of in is "not given", so write zero values with
// InputWrites (or DecodeWrites). On failure it
// returns the error together with the state as of the last completed step,
// so a caller can still use what was gathered. A run that pauses at an
// interrupt returns an *InterruptError (errors.Is ErrInterrupted) with the
// state before the paused step: a paused run is never mistaken for a
// finished one.
func (c *Compiled[S]) Invoke(ctx context.Context, in S, opts ...RunOption) (S, error) {
	r, err := c.newRun(ctx, opts)
	if err != nil {
		var zero S
		return zero, err
	}
	r.traceRun(RunInfo{})
	if err = r.begin(in); err == nil {
		err = r.loop()
	}
	r.endTrace(err)
	return r.state, err
}

// Resume continues the newest checkpoint of a thread (named with Thread):
// after a failure, a crash or an interrupt, only the tasks of the stopped
// step that had not finished run again. Answer and AnswerFor give the
// answers to pending interrupts (the interrupted nodes run again from their
// start and Interrupt returns the answers); breakpoints are released; tasks
// still waiting for an answer stay paused while the rest run. With
// FromCheckpoint it continues an older checkpoint, on a new branch.
// Resuming a finished thread returns its final state.
func (c *Compiled[S]) Resume(ctx context.Context, opts ...RunOption) (S, error) {
	r, err := c.newRun(ctx, opts)
	if err != nil {
		var zero S
		return zero, err
	}
	r.traceRun(RunInfo{Resume: true})
	done, err := r.resume()
	if err == nil && !done {
		err = r.loop()
	}
	r.endTrace(err)
	return r.state, err
}

// Stream runs the graph from in and yields its events as they happen; the
// last event is EventEnd, or the error that stopped the run. Breaking out of
// the loop cancels the run; Stream returns after every task has stopped.
func (c *Compiled[S]) Stream(ctx context.Context, in S, opts ...RunOption) iter.Seq2[Event[S], error] {
	return c.stream(ctx, opts, false, func(r *run[S]) (bool, error) { return false, r.begin(in) })
}

// ResumeStream is Resume, streamed.
func (c *Compiled[S]) ResumeStream(ctx context.Context, opts ...RunOption) iter.Seq2[Event[S], error] {
	return c.stream(ctx, opts, true, (*run[S]).resume)
}

func (c *Compiled[S]) stream(ctx context.Context, opts []RunOption, resume bool, start func(*run[S]) (bool, error)) iter.Seq2[Event[S], error] {
	return func(yield func(Event[S], error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		r, err := c.newRun(ctx, opts)
		if err != nil {
			yield(Event[S]{}, err)
			return
		}
		r.sink, r.ownSink, r.prefix = make(chan custom, 64), true, ""
		r.out = r.sink
		r.emit = func(ev Event[S]) bool { return yield(ev, nil) }
		r.traceRun(RunInfo{Resume: resume})
		done, err := start(r)
		if err == nil && r.wants(EventStep) && !yield(Event[S]{Kind: EventStep, Step: r.step, State: r.state}, nil) {
			r.endTrace(nil)
			return // the state the run starts from, as LangGraph's values stream
		}
		if err == nil && !done {
			err = r.loop()
		}
		r.endTrace(err)
		switch {
		case r.stop:
		case err != nil && err == error(r.paused):
			if r.wants(EventInterrupt) {
				yield(Event[S]{Kind: EventInterrupt, Step: r.step + 1, State: r.state, Interrupts: r.paused.Interrupts}, nil)
			}
		case err != nil:
			yield(Event[S]{}, err)
		case r.wants(EventEnd):
			yield(Event[S]{Kind: EventEnd, Step: r.step, State: r.state}, nil)
		}
	}
}

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
	Created      time.Time
	Source       CheckpointSource
	Ran          []string // nodes of the step that led here, or UpdateState's node
	Run          string   // the run id, when the run gave one (RunID)
	// Interrupts are what the pending step waits on, and Tasks the pending
	// step's tasks with what is stored of each (State only; History leaves
	// both out).
	Interrupts []PendingInterrupt
	Tasks      []TaskState[S]
}

// TaskState is a task of a snapshot's pending step.
type TaskState[S any] struct {
	Node string
	Arg  any // the Send payload of a task node
	// Done: the task finished and Update is what it wrote (merged into the
	// state when the whole step has finished).
	Done   bool
	Update Update[S]
	// Interrupts are what the task waits on.
	Interrupts []PendingInterrupt
}

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
func (c *Compiled[S]) State(ctx context.Context, at Ref) (Snapshot[S], error) {
	r, err := c.reader(ctx, at)
	if err != nil {
		return Snapshot[S]{}, err
	}
	cp, err := r.cp.Get(ctx, at)
	if err != nil {
		if errors.Is(err, ErrCheckpointNotFound) {
			return Snapshot[S]{}, fmt.Errorf("%w: thread %q has no checkpoint%s", err, at.Thread, quoted(" ", at.Checkpoint))
		}
		return Snapshot[S]{}, fmt.Errorf("graph: loading thread %q: %w", at.Thread, err)
	}
	if err := r.load(cp); err != nil {
		return Snapshot[S]{}, err
	}
	interrupts := r.pending()
	finished := at.Checkpoint == "" && slices.ContainsFunc(r.tasks, func(t task[S]) bool { return t.done })
	if finished {
		stored := r.state
		if err := r.merge(); err != nil {
			// The finished writes conflict: Resume will report it; show the
			// state as stored.
			r.state, finished = stored, false
		}
	}
	snap := snapshotOf[S](cp, r.state)
	snap.Interrupts = interrupts
	if finished {
		snap.Next = snap.Next[:0]
	}
	for i := range r.tasks {
		t := &r.tasks[i]
		snap.Tasks = append(snap.Tasks, TaskState[S]{Node: t.node.name, Arg: t.arg, Done: t.done, Update: t.upd, Interrupts: t.waiting()})
		if finished && !t.done {
			snap.Next = append(snap.Next, t.node.name)
		}
	}
	return snap, nil
}

// History returns a thread's checkpoints, newest first — at most limit of
// them, all when limit ≤ 0 — across every branch, each with its state.
// With a checkpoint (at.At), it lists the checkpoints stored before that
// one (LangGraph's before), to page through a long history.
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
		var st S
		if err := c.decodeState(cp, &st); err != nil {
			return nil, err
		}
		out = append(out, snapshotOf[S](cp, st))
	}
	return out, nil
}

// UpdateOption configures UpdateState.
type UpdateOption func(*updateSettings)

type updateSettings struct{ asNode string }

// AsNode makes UpdateState apply its update as if node had returned it:
// what runs next is what follows the node.
func AsNode(node string) UpdateOption { return func(s *updateSettings) { s.asNode = node } }

// UpdateState edits a thread's state: it applies u to the state of a
// checkpoint (the newest when at.Checkpoint is "") through the fields'
// reducers and stores the result as a new checkpoint. With AsNode(n), the
// update stands for node n's: what runs next is what would follow n — its
// edges and routers on the new state, and u's Goto and Send. Without it,
// the pending step of the checkpoint stays as it was (its tasks run again
// in full on the new state). Editing an older checkpoint starts a branch
// (SourceFork); the newest checkpoint's branch stays in History. Resume
// continues from the update.
func (c *Compiled[S]) UpdateState(ctx context.Context, at Ref, u Update[S], opts ...UpdateOption) (Snapshot[S], error) {
	var set updateSettings
	for _, o := range opts {
		o(&set)
	}
	asNode, thread, id := set.asNode, at.Thread, at.Checkpoint
	r, err := c.reader(ctx, at)
	if err != nil {
		return Snapshot[S]{}, err
	}
	cp, err := r.cp.Get(ctx, at)
	if err != nil {
		if errors.Is(err, ErrCheckpointNotFound) {
			return Snapshot[S]{}, fmt.Errorf("%w: thread %q has no checkpoint%s to update", err, thread, quoted(" ", id))
		}
		return Snapshot[S]{}, fmt.Errorf("graph: loading thread %q: %w", thread, err)
	}
	source := SourceUpdate
	if id != "" {
		if fork, err := r.isFork(cp.ID); err != nil {
			return Snapshot[S]{}, err
		} else if fork {
			source = SourceFork
		}
	}
	if err := r.load(cp); err != nil {
		return Snapshot[S]{}, err
	}
	var from *cnode[S]
	if asNode != "" {
		i, ok := c.byName[asNode]
		if !ok {
			return Snapshot[S]{}, fmt.Errorf("graph: UpdateState as node %q: the graph has no such node (nodes: %s)", asNode, strings.Join(c.g.order, ", "))
		}
		from = c.nodes[i]
	}
	for _, w := range u.writes {
		if !c.hasField(w.field()) {
			return Snapshot[S]{}, fmt.Errorf("graph: UpdateState writes field %s, which is not declared: pass its handle to graph.New", w.field().goName())
		}
		w.apply(&r.state)
	}
	for _, w := range u.writes {
		w.field().afterMerge(&r.state)
	}
	if from != nil {
		r.next = r.next[:0]
		if err := r.plan(from, &task[S]{node: from, upd: u}); err != nil {
			return Snapshot[S]{}, err
		}
		r.planJoins()
		r.tasks, r.ran = r.next, []string{asNode}
	} else if len(u.gotos) > 0 || len(u.sends) > 0 {
		return Snapshot[S]{}, errors.New("graph: UpdateState with Goto or Send needs asNode: the node whose routing they stand for")
	} else {
		r.ran = nil
	}
	r.source = source
	if err := r.checkpoint(cp.ID); err != nil {
		return Snapshot[S]{}, err
	}
	return c.State(ctx, r.ref(r.cpID))
}

// reader is a run for reading or editing what is stored of a thread, in the
// namespace at names.
func (c *Compiled[S]) reader(ctx context.Context, at Ref) (*run[S], error) {
	r, err := c.newRun(ctx, []RunOption{Thread(at.Thread)})
	if err != nil {
		return nil, err
	}
	r.ns = at.Namespace
	return r, nil
}

func snapshotOf[S any](cp *Checkpoint, st S) Snapshot[S] {
	snap := Snapshot[S]{State: st, Step: cp.Step, CheckpointID: cp.ID, Parent: cp.Parent, Created: cp.Created,
		Source: cp.Source, Ran: cp.Ran, Run: cp.Run}
	for _, t := range cp.Next {
		snap.Next = append(snap.Next, t.Node)
	}
	return snap
}

func quoted(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + strconv.Quote(s)
}
