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

// TaskRunner runs the tasks of each step somewhere else than on the
// engine's goroutines: in other processes, on other machines. With
// WithTaskRunner the engine still does everything but run nodes — it
// begins the run, plans each step, calls the routers, merges the updates
// in task order through the reducers and checks the recursion limit — so a
// run gives the same final state as in-process on the same inputs. The
// other side runs each task with Compiled.RunTask on a graph compiled from
// the same code. Package graph/temporalgraph is a TaskRunner that runs
// tasks as Temporal activities.
//
// Interrupts raised by a task are the runner's to resolve: it runs the task
// again with the answers (TaskInput.Answers) until it returns an update or
// fails. Static breakpoints (WithInterruptBefore, WithInterruptAfter) need a
// checkpointer's pause and Resume, so a run with a TaskRunner refuses them.
type TaskRunner interface {
	// RunTasks runs the step's tasks, in parallel as the runner sees fit,
	// and returns one result per task of step.Tasks, in the same order. An
	// error fails the whole step (the run was cancelled, the runner broke);
	// a task's own failure goes in its RemoteResult.
	RunTasks(ctx context.Context, step RemoteStep) ([]RemoteResult, error)
}

// WithTaskRunner runs every step's tasks through tr (see TaskRunner).
func WithTaskRunner(tr TaskRunner) RunOption { return runFunc(func(r *runSettings) { r.runner = tr }) }

// RemoteStep is a step's work as a TaskRunner gets it.
type RemoteStep struct {
	Step int
	// State is the state every task of the step reads, as JSON.
	State json.RawMessage
	// Tasks are the tasks to run, in task order.
	Tasks []RemoteTask
}

// RemoteTask is one task of a RemoteStep.
type RemoteTask struct {
	Node string
	// Index is the task's place in its step, the order its update merges in.
	Index int
	// Arg is the Send payload of a task node (nil for other nodes), as the
	// Go value, to describe the task; ArgJSON is the same payload as JSON,
	// to send.
	Arg     any
	ArgJSON json.RawMessage
	// Retry is the node's retry policy with its defaults filled in; nil
	// when the node is not retried.
	Retry *RetryPolicy
	// Timeout bounds one attempt (WithTimeout); 0 when there is none.
	Timeout time.Duration
}

// RemoteResult is the outcome of one RemoteTask.
type RemoteResult struct {
	// Update is the task's Update as MarshalJSON encodes it.
	Update json.RawMessage
	// Err is why the task failed; the run fails with it.
	Err error
	// Attempts counts the attempts made, when known.
	Attempts int
}

// TaskInput is one attempt of one task, for Compiled.RunTask.
type TaskInput struct {
	Step  int
	State json.RawMessage
	Task  RemoteTask // Node, Index and ArgJSON are read
	// Attempt is this attempt's number, from 1; with the node's retry
	// policy it decides TaskOutcome.Retry.
	Attempt int
	// Scope makes the IDs of the task's interrupts unique, together with
	// the step and the task index: a run's ID, for example.
	Scope string
	// Answers answer interrupts the task raised in an earlier attempt.
	Answers []AnswerRecord
}

// TaskOutcome is what one attempt of a task came to.
type TaskOutcome struct {
	// Update is the task's Update as MarshalJSON encodes it, when the task
	// finished.
	Update json.RawMessage
	// Interrupts are what the task waits on when it stopped at
	// graph.Interrupt: run it again with TaskInput.Answers.
	Interrupts []PendingInterrupt
	// Retry says, when the attempt failed, that the node's retry policy
	// wants another attempt.
	Retry bool
}

// RunTask runs one attempt of a task of a RemoteStep: the other side of a
// TaskRunner. The node runs under its timeout, on the state and payload of
// in decoded into the graph's own types; a panic becomes a *PanicError. A
// failed attempt returns a *NodeError, with TaskOutcome.Retry saying
// whether the node's policy allows another (the caller waits and retries).
// A task that stops at graph.Interrupt returns its Interrupts and no error.
//
// observe, when not nil, gets the task's events as a stream would:
// EventTaskStart, each Emit as EventCustom (and Streaming is true for the
// node), then EventTaskEnd with the update or the error. It is called from
// the goroutine running RunTask and from the node's Emit calls.
func (c *Compiled[S]) RunTask(ctx context.Context, in TaskInput, observe func(Event[S])) (TaskOutcome, error) {
	idx, ok := c.byName[in.Task.Node]
	if !ok {
		return TaskOutcome{}, fmt.Errorf("graph: RunTask: this graph has no node %q: the worker runs another version of the graph", in.Task.Node)
	}
	n := c.nodes[idx]
	if len(in.State) > c.set.maxBytes {
		return TaskOutcome{}, c.tooLarge(fmt.Sprintf("the state of task %d (%s)", in.Task.Index, n.name), len(in.State))
	}
	r := &run[S]{c: c, ctx: ctx, step: in.Step}
	if err := json.Unmarshal(in.State, &r.state); err != nil {
		return TaskOutcome{}, fmt.Errorf("graph: RunTask: decoding the state of step %d into %T: %w", in.Step, r.state, err)
	}
	arg, err := c.decodeArg(n.name, in.Task.ArgJSON)
	if err != nil {
		return TaskOutcome{}, fmt.Errorf("graph: RunTask: %w", err)
	}
	t := &task[S]{node: n, arg: arg}
	h := &hitl{base: in.Scope + "\x00" + strconv.Itoa(in.Step) + "\x00" + strconv.Itoa(in.Task.Index),
		node: n.name, task: in.Task.Index, step: in.Step, answers: slices.Clone(in.Answers)} // a rejected answer is deleted from it
	t.info = taskInfo{path: n.name, step: in.Step, index: in.Task.Index, hi: &taskHITL{root: h}}
	// The node's context ends with the attempt, so that an Emit from a
	// goroutine the node left behind returns instead of blocking.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var sink chan custom
	var stop, drained chan struct{}
	if observe != nil {
		sink, stop, drained = make(chan custom, 64), make(chan struct{}), make(chan struct{})
		t.info.sink = sink
		observe(Event[S]{Kind: EventTaskStart, Step: in.Step, Node: n.name, Task: in.Task.Index, Arg: arg})
		go func() {
			defer close(drained)
			send := func(c custom) { observe(eventOf[S](c)) }
			for {
				select {
				case c := <-sink:
					send(c)
				case <-stop:
					for {
						select {
						case c := <-sink:
							send(c)
						default:
							return
						}
					}
				}
			}
		}()
	}
	upd, err := r.attempt(&taskCtx{Context: ctx, info: t.info}, t)
	var final error // a failure no retry can change
	if pu, ok, own, bad := r.fromChild(t, err); ok {
		upd, err = pu, nil
	} else if own != nil {
		final = &NodeError{Node: n.name, Step: in.Step, Err: own}
	} else if bad != nil {
		final = bad
	}
	if observe != nil {
		close(stop) // the node's own Emits happened before it returned
		<-drained
	}
	var out TaskOutcome
	switch {
	case final != nil:
		err = final
	case len(h.rejected) > 0:
		err = &NodeError{Node: n.name, Step: in.Step, Err: h.rejected[0]}
	case len(h.raised) > 0:
		return TaskOutcome{Interrupts: h.raised}, nil
	case err == nil:
		out.Update, err = json.Marshal(upd)
		if err != nil {
			err = fmt.Errorf("its update cannot be encoded as JSON: %w", err)
		} else if len(out.Update) > c.set.maxBytes {
			err, out.Update = c.tooLarge("its update", len(out.Update)), nil
		}
		if err != nil {
			err = &NodeError{Node: n.name, Step: in.Step, Err: err}
		}
	default:
		// The node's own error, wrapped even when it is a *NodeError (a
		// subgraph's node failed), as the in-process run does.
		attempts := 0
		if n.retries {
			attempts = in.Attempt
		}
		out.Retry = n.retries && in.Attempt < n.policy.MaxAttempts && ctx.Err() == nil && n.policy.RetryOn(err)
		err = &NodeError{Node: n.name, Step: in.Step, Attempts: attempts, Err: err}
	}
	if observe != nil {
		ev := Event[S]{Kind: EventTaskEnd, Step: in.Step, Node: n.name, Task: in.Task.Index, Err: err}
		if err == nil {
			ev.Update = upd
		}
		observe(ev)
	}
	return out, err
}

// executeRemote runs the step's unfinished tasks through the run's
// TaskRunner and records their outcomes.
func (r *run[S]) executeRemote(ctx context.Context) error {
	state, err := json.Marshal(r.state)
	if err != nil {
		return fmt.Errorf("graph: the state cannot be encoded as JSON for a TaskRunner: %w", err)
	}
	if len(state) > r.c.set.maxBytes {
		return r.c.tooLarge(fmt.Sprintf("the state before step %d", r.step), len(state))
	}
	step := RemoteStep{Step: r.step, State: state}
	for i := range r.tasks {
		t := &r.tasks[i]
		t.info = taskInfo{path: r.prefix + t.node.name, step: r.step, index: i}
		if !t.runnable() {
			continue
		}
		rt := RemoteTask{Node: t.node.name, Index: i, Arg: t.arg, Timeout: t.node.timeout}
		if t.node.payload != nil {
			if rt.ArgJSON, err = json.Marshal(t.arg); err != nil {
				return fmt.Errorf("graph: the Send payload for %q cannot be encoded as JSON: %w", t.node.name, err)
			}
		}
		if t.node.retries {
			p := t.node.policy
			rt.Retry = &p
		}
		step.Tasks = append(step.Tasks, rt)
		if r.emit != nil && r.wants(EventTaskStart) && !r.emit(Event[S]{Kind: EventTaskStart, Step: r.step, Node: t.node.name, Task: i, Arg: t.arg}) {
			r.stop = true
			return nil
		}
	}
	if len(step.Tasks) == 0 {
		return nil
	}
	res, err := r.runner.RunTasks(ctx, step)
	if err != nil {
		return r.taskErr(fmt.Errorf("graph: step %d: %w", r.step, err))
	}
	if len(res) != len(step.Tasks) {
		return fmt.Errorf("graph: step %d: the TaskRunner returned %d results for %d tasks", r.step, len(res), len(step.Tasks))
	}
	var first error
	for k, rt := range step.Tasks {
		t := &r.tasks[rt.Index]
		t.done = true
		t.upd, t.err = Update[S]{}, res[k].Err
		if t.err == nil {
			u, err := r.c.decodeUpdate(res[k].Update)
			if err != nil {
				t.err = fmt.Errorf("decoding its update: %w", err)
			}
			t.upd = u
		}
		if t.err != nil {
			var ne *NodeError
			if !errors.As(t.err, &ne) {
				t.err = &NodeError{Node: r.prefix + t.node.name, Step: r.step, Attempts: res[k].Attempts, Err: t.err}
			}
			if first == nil {
				first = t.err
			}
		}
		if r.emit != nil && r.wants(EventTaskEnd) && !r.emit(Event[S]{Kind: EventTaskEnd, Step: r.step, Node: t.node.name, Task: rt.Index, Update: t.upd, Err: t.err}) {
			r.stop = true
		}
	}
	return r.taskErr(first)
}

// MergeUpdates merges encoded task updates — RemoteResult.Update — into s
// through the fields' reducers, in order, as the end of a step merges its
// tasks' updates; their routing (Goto, Send) is not followed. A TaskRunner's
// caller uses it to show what the finished tasks of a failed step wrote:
// Invoke returns the state before that step, and State shows a stored
// thread's finished writes the same way.
func (c *Compiled[S]) MergeUpdates(s S, updates ...json.RawMessage) (S, error) {
	r := &run[S]{c: c, state: s}
	for k, data := range updates {
		u, err := c.decodeUpdate(data)
		if err != nil {
			return s, fmt.Errorf("graph: MergeUpdates: update %d: %w", k, err)
		}
		r.tasks = append(r.tasks, task[S]{node: &cnode[S]{node: &node[S]{name: "update " + strconv.Itoa(k)}}, upd: u})
	}
	if err := r.merge(); err != nil {
		return s, err
	}
	return r.state, nil
}
