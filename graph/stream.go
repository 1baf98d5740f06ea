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
	// state after the step.
	EventStep
	// EventCustom: a node called Emit. Value is what it emitted; Node is the
	// node, as "outer/inner" for a node of a subgraph.
	EventCustom
	// EventEnd: the run finished. State is the final state.
	EventEnd
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
	State  S     // EventStep and EventEnd
	Value  any   // EventCustom
}

// Events limits a stream to the given kinds of event (default: all).
func Events(kinds ...EventKind) RunOption {
	return func(r *runSettings) {
		for _, k := range kinds {
			r.kinds |= k
		}
	}
}

// Invoke runs the graph from in and returns the final state. On failure it
// returns the error together with the state as of the last completed step,
// so a caller can still use what was gathered.
func (c *Compiled[S]) Invoke(ctx context.Context, in S, opts ...RunOption) (S, error) {
	r, err := c.newRun(ctx, opts)
	if err != nil {
		var zero S
		return zero, err
	}
	if err := r.begin(in); err != nil {
		return r.state, err
	}
	err = r.loop()
	return r.state, err
}

// Resume continues the newest checkpoint of a thread (named with Thread):
// after a failure, only the tasks of the interrupted step that had not
// finished run again. Resuming a finished thread returns its final state.
func (c *Compiled[S]) Resume(ctx context.Context, opts ...RunOption) (S, error) {
	r, err := c.newRun(ctx, opts)
	if err != nil {
		var zero S
		return zero, err
	}
	if done, err := r.resume(); err != nil || done {
		return r.state, err
	}
	err = r.loop()
	return r.state, err
}

// Stream runs the graph from in and yields its events as they happen; the
// last event is EventEnd, or the error that stopped the run. Breaking out of
// the loop cancels the run; Stream returns after every task has stopped.
func (c *Compiled[S]) Stream(ctx context.Context, in S, opts ...RunOption) iter.Seq2[Event[S], error] {
	return c.stream(ctx, opts, func(r *run[S]) (bool, error) { return false, r.begin(in) })
}

// ResumeStream is Resume, streamed.
func (c *Compiled[S]) ResumeStream(ctx context.Context, opts ...RunOption) iter.Seq2[Event[S], error] {
	return c.stream(ctx, opts, (*run[S]).resume)
}

func (c *Compiled[S]) stream(ctx context.Context, opts []RunOption, start func(*run[S]) (bool, error)) iter.Seq2[Event[S], error] {
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
		done, err := start(r)
		if err == nil && !done {
			err = r.loop()
		}
		switch {
		case r.stop:
		case err != nil:
			yield(Event[S]{}, err)
		case r.wants(EventEnd):
			yield(Event[S]{Kind: EventEnd, Step: r.step, State: r.state}, nil)
		}
	}
}

// Snapshot is a thread's state as of its newest checkpoint.
type Snapshot[S any] struct {
	State        S
	Step         int
	Next         []string // nodes of the pending step; empty when the run finished
	CheckpointID string
}

// GetState returns the newest checkpointed state of a thread.
func (c *Compiled[S]) GetState(ctx context.Context, thread string) (Snapshot[S], error) {
	var snap Snapshot[S]
	r, err := c.newRun(ctx, []RunOption{Thread(thread)})
	if err != nil {
		return snap, err
	}
	if _, err := r.resume(); err != nil {
		return snap, err
	}
	snap.State, snap.Step, snap.CheckpointID = r.state, r.step, r.cpID
	for _, t := range r.tasks {
		snap.Next = append(snap.Next, t.node.name)
	}
	return snap, nil
}
