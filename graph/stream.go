package graph

import (
	"context"
	"iter"
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
	// input merged (Stream), or the stored step's state (ResumeStream). In a
	// checkpointed run, Checkpoint names the checkpoint the state is stored
	// as.
	EventStep
	// EventCustom: a node called Emit. Value is what it emitted; Node is the
	// node, as "outer/inner" for a node of a subgraph (with StreamSubgraphs,
	// Namespace names the subgraph's run too).
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
	// Cached: the EventTaskEnd of a task whose update came from the node
	// cache (WithCachePolicy); the node did not run.
	Cached bool
	// Interrupts are what an EventInterrupt waits on.
	Interrupts []PendingInterrupt
	// Namespace is set on the events of a subgraph's run that
	// StreamSubgraphs passes up; it is empty for the run's own events. It
	// names the subgraph's run as LangGraph does: "node:task-id" for the
	// task that runs it, after its parent's namespace and "|" when it is
	// nested deeper — the Checkpoint.Namespace of a checkpointed run's
	// subgraph, "node:task-id#k" for the k-th subgraph run of one task.
	// Parallel tasks of one node have their own. Such an event's Step and
	// Task are the subgraph's own; Node is the node's path, "outer/inner".
	Namespace string
	// Checkpoint is, on an EventStep of a run with a thread — the run's
	// own, or a subgraph's that StreamSubgraphs passes up — the checkpoint
	// the step's state is stored as (LangGraph's "checkpoints" stream); nil
	// without a checkpointer and on other events.
	Checkpoint *StepCheckpoint
	// Untyped carries, on an event of a subgraph whose state type is not S
	// (AddMappedSubgraph), what State and Update carry for a subgraph over
	// S: its state (a value of its own state type) on EventStep and
	// EventInterrupt, its Update on EventTaskEnd. json.Marshal encodes both
	// as State and Update encode. Nil otherwise.
	Untyped any
}

// StepCheckpoint is the checkpoint a run stored for a step (the
// Checkpoint of an EventStep): which it is, what it follows and what it
// waits on, as the run had it in hand — a consumer need not ask the
// store, whose newest checkpoint in the namespace may be a later one by the
// time a subgraph's event arrives, or, with DurabilityAsync or
// DurabilityExit, not stored yet. Its state is the event's State (or
// Untyped, for a subgraph over another state type); read it later with
// State(ctx, Ref) on the compiled graph that wrote it.
type StepCheckpoint struct {
	// Ref names the checkpoint: its thread, namespace ("" at the top,
	// "node:task-id" for a subgraph's run) and ID. With DurabilityExit
	// only the run's last checkpoint is ever stored.
	Ref Ref
	// Parent is the checkpoint it follows in its namespace, as it is
	// stored: "" for the namespace's first; with DurabilityExit, the
	// checkpoint stored last before the run.
	Parent string
	// Step is the number of steps the run had completed (0: its input).
	Step   int
	Source CheckpointSource
	Run    string // the run that wrote it
	// Next are the tasks of the step it waits on; a task's ID names the
	// namespace of the subgraphs it runs ("node:task-id").
	Next []PendingTask
	// Parents are, for a subgraph's checkpoint, the checkpoints of the
	// runs above it, outermost first: for each, the checkpoint whose
	// pending step holds the task that ran the next run down (LangGraph's
	// checkpoint_map and metadata.parents). Nil at the top.
	Parents []Ref
}

// StreamSubgraphs passes the events of subgraph runs up to the stream of
// the run (Stream, ResumeStream): each subgraph run — of AddSubgraph,
// AddMappedSubgraph, or a node calling Invoke without a Thread of its
// own — reports the state it starts from and the state after each of its
// steps (EventStep), its tasks' starts and ends (EventTaskStart,
// EventTaskEnd with their updates) and the interrupts it stops at
// (EventInterrupt, before the run's own), each with its Namespace; its
// nodes' Emit events carry the Namespace too; in a checkpointed run its
// EventSteps carry its Checkpoint. A node that streams a compiled graph
// itself (Stream, ResumeStream) gets that graph's events, and the run's
// stream gets them too, as a subgraph's — LangGraph's stream of a subgraph
// inside a node of a parent streamed with subgraphs=True. This is
// LangGraph's stream(subgraphs=True). Without it a stream has only the run's own
// events and the Emit events of its subgraphs. Events limits them too.
func StreamSubgraphs() RunOption {
	return runFunc(func(r *runSettings) { r.subgraphs = true })
}

// upEvent is an event of a subgraph's run on its way to the stream of the
// run at the top (StreamSubgraphs), as the value of a custom, which has
// the event's node path, step and task.
type upEvent struct {
	kind       EventKind
	ns         string
	arg, value any
	data       any // the subgraph's state (EventStep, EventInterrupt) or Update (EventTaskEnd)
	err        error
	cached     bool
	interrupts []PendingInterrupt
	cp         *StepCheckpoint
}

// passUp sends ev, an event of a subgraph's run, to the stream at the top.
// It reports true always: the subgraph's run goes on whatever the
// consumer does, which cancels the run at the top when it leaves.
func (r *run[S]) passUp(ev Event[S]) bool {
	r.sendUp(r.out, r.prefix, ev)
	return true
}

// sendUp sends ev to out, the sink of the run at the top, its node path
// after prefix. ev is the run's own event, or one of its own subgraphs'
// (which has its Namespace already).
func (r *run[S]) sendUp(out chan<- custom, prefix string, ev Event[S]) {
	ns := ev.Namespace
	if ns == "" {
		ns = r.ns
	}
	n := &upEvent{kind: ev.Kind, ns: ns, arg: ev.Arg, value: ev.Value, err: ev.Err, cached: ev.Cached, interrupts: ev.Interrupts, cp: ev.Checkpoint}
	switch {
	case ev.Untyped != nil:
		n.data = ev.Untyped
	case ev.Kind == EventStep, ev.Kind == EventInterrupt:
		n.data = ev.State
	case ev.Kind == EventTaskEnd:
		n.data = ev.Update
	}
	node := ev.Node
	if node != "" {
		node = prefix + node
	}
	select {
	case out <- custom{node: node, step: ev.Step, task: ev.Task, value: n}:
	case <-r.ctx.Done():
	}
}

// eventOf is the stream event of c: an Emit value, or an event a subgraph
// passed up.
func eventOf[S any](c custom) Event[S] {
	n, ok := c.value.(*upEvent)
	if !ok {
		return Event[S]{Kind: EventCustom, Step: c.step, Node: c.node, Task: c.task, Value: c.value}
	}
	ev := Event[S]{Kind: n.kind, Step: c.step, Node: c.node, Task: c.task, Namespace: n.ns, Arg: n.arg, Value: n.value,
		Err: n.err, Cached: n.cached, Interrupts: n.interrupts, Checkpoint: n.cp}
	switch d := n.data.(type) {
	case nil:
	case S:
		ev.State = d
	case Update[S]:
		ev.Update = d
	default:
		ev.Untyped = d
	}
	return ev
}

// duplex is the stream of a graph a node streams itself in a run that
// streams its subgraphs' events: each event goes up to the run at the
// top, as a subgraph's, and to the node's consumer as its stream.
type duplex[S any] struct {
	r      *run[S]
	yield  func(Event[S], error) bool
	up     chan<- custom // the sink of the run at the top
	prefix string        // the node's path in it, "node/"
	kinds  EventKind     // what the node's consumer asked for (Events)
	left   bool          // the node's consumer broke out: yield no more
}

func (d *duplex[S]) emit(ev Event[S]) bool {
	if d.left {
		return false
	}
	r := d.r
	r.sendUp(d.up, d.prefix, ev)
	own := ev.Namespace == "" || ev.Namespace == r.ns
	switch {
	case own && ev.Kind == EventInterrupt:
		return true // a subgraph's pause (interrupted): the node hears of it as the run's error
	case own:
		ev.Namespace = ""
	case !r.subgraphs && ev.Kind != EventCustom:
		return true // of its subgraphs' runs, the node's consumer asked only for Emits
	case !r.subgraphs:
		ev.Namespace = ""
	}
	if d.kinds != 0 && d.kinds&ev.Kind == 0 {
		return true
	}
	d.left = !d.yield(ev, nil)
	return !d.left
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
	if err = r.take(); err == nil {
		if err = r.start(in); err == nil {
			err = r.loop()
		}
		err = r.flush(err)
		r.release()
	}
	r.endTrace(err)
	return r.state, err
}

// Resume continues the newest checkpoint of a thread (named with Thread):
// after a failure, a crash or an interrupt, only the tasks of the stopped
// step that had not finished run again. Answer and AnswerFor give the
// answers to pending interrupts (the interrupted nodes run again from their
// start and Interrupt returns the answers); breakpoints are released; tasks
// still waiting for an answer stay paused while the rest run. WithUpdate
// edits the state first, in the same commit as the answers — LangGraph's
// Command(resume, update, goto). With a checkpoint (Thread(id).At) it
// continues an older checkpoint, on a new branch. Resuming a finished
// thread returns its final state. Each Resume may take as many steps as
// the recursion limit.
func (c *Compiled[S]) Resume(ctx context.Context, opts ...RunOption) (S, error) {
	r, err := c.newRun(ctx, opts)
	if err != nil {
		var zero S
		return zero, err
	}
	r.traceRun(RunInfo{Resume: true})
	if err = r.take(); err == nil {
		var done bool
		if done, err = r.resume(); err == nil && !done {
			err = r.loop()
		}
		err = r.flush(err)
		r.release()
	}
	r.endTrace(err)
	return r.state, err
}

// Stream runs the graph from in and yields its events as they happen; the
// last event is EventEnd, or the error that stopped the run. Breaking out of
// the loop cancels the run; Stream returns after every task has stopped.
func (c *Compiled[S]) Stream(ctx context.Context, in S, opts ...RunOption) iter.Seq2[Event[S], error] {
	return c.stream(ctx, opts, false, func(r *run[S]) (bool, error) { return false, r.start(in) })
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
		// A graph a node streams itself streams to that node — and, when
		// the node's run streams its subgraphs' events (newRun set up),
		// up to it as well.
		var dx *duplex[S]
		if r.up {
			dx = &duplex[S]{r: r, yield: yield, up: r.out, prefix: r.prefix, kinds: r.kinds}
			r.kinds = 0 // the run at the top takes every kind; the node's consumer those it asked for
		}
		r.sink, r.ownSink, r.prefix = make(chan custom, 64), true, ""
		r.out = r.sink
		switch ns := r.ns; {
		case dx != nil:
			r.emit = dx.emit
		case ns != "":
			// A graph a node of a checkpointed run streams, in a namespace
			// of the run's thread: its nodes' Emits name it, but are its
			// own events.
			r.emit = func(ev Event[S]) bool {
				if ev.Namespace == ns {
					ev.Namespace = ""
				}
				return yield(ev, nil)
			}
		default:
			r.emit = func(ev Event[S]) bool { return yield(ev, nil) }
		}
		r.traceRun(RunInfo{Resume: resume})
		if err := r.take(); err != nil {
			r.endTrace(err)
			yield(Event[S]{}, err)
			return
		}
		defer r.release()
		// The writes of a run the consumer left are made all the same
		// (nobody is left to hear of a failure to make them).
		defer func() { _ = r.flush(nil) }()
		done, err := start(r)
		if err == nil && r.wants(EventStep) && (resume || dx == nil) && !r.emit(Event[S]{Kind: EventStep, Step: r.step, State: r.state, Checkpoint: r.stepCheckpoint()}) {
			r.endTrace(nil)
			return // the state the run starts from, as LangGraph's values stream
		}
		if err == nil && !done {
			err = r.loop()
		}
		err = r.flush(err)
		r.endTrace(err)
		if dx != nil {
			r.kinds = dx.kinds
		}
		switch {
		case r.stop || dx != nil && dx.left:
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
