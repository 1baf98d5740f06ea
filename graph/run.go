package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// RunOption configures one run (Invoke, Stream, Resume, ResumeStream).
type RunOption func(*runSettings)

type runSettings struct {
	thread      string
	limit       int
	concurrency int
	kinds       EventKind // bit set; 0 means all
}

// Thread names the conversation the run belongs to. With a Checkpointer the
// run's progress is stored under it: Resume continues it after a failure, and
// Invoke on a thread whose last run finished continues from that run's state.
func Thread(id string) RunOption { return func(r *runSettings) { r.thread = id } }

// RecursionLimit overrides the graph's recursion limit for one run.
func RecursionLimit(steps int) RunOption { return func(r *runSettings) { r.limit = steps } }

// MaxConcurrency overrides the graph's bound on parallel tasks for one run.
func MaxConcurrency(n int) RunOption { return func(r *runSettings) { r.concurrency = n } }

// run is one execution of a compiled graph.
type run[S any] struct {
	c     *Compiled[S]
	ctx   context.Context
	state S
	step  int
	limit int
	conc  int

	cp     Checkpointer
	thread string
	cpID   string

	// out is where tasks' Emit values go: this run's own sink when it is
	// streamed, the parent's when it is a subgraph of a streamed run, nil
	// otherwise.
	out     chan<- custom
	sink    chan custom // own sink, drained by this run
	ownSink bool
	prefix  string // path prefix of this run's nodes inside a parent graph

	emit  func(Event[S]) bool // nil when nobody streams this run
	kinds EventKind
	stop  bool // the stream's consumer broke out

	tasks, next []task[S]
	planned     []int    // per node: the planning round that scheduled it
	routed      []int    // per node: the planning round that routed it
	joinSeen    [][]bool // per join, per source
	setters     []setter[S]
	collect     *[]Write[S] // same-state subgraph: every write, in merge order
}

type setter[S any] struct {
	f    Field[S]
	task int
}

type task[S any] struct {
	node *cnode[S]
	arg  any
	upd  Update[S]
	err  error
	done bool
	info taskInfo
	tctx taskCtx
}

// taskCtx is a task's context: its step's context plus the task's identity,
// found by Emit and by nested graphs. It lives inside the task, so giving a
// task its context allocates nothing.
type taskCtx struct {
	context.Context
	info *taskInfo
}

func (c *taskCtx) Value(key any) any {
	if _, ok := key.(taskKey); ok {
		return c.info
	}
	return c.Context.Value(key)
}

func (c *Compiled[S]) newRun(ctx context.Context, opts []RunOption) (*run[S], error) {
	rs := runSettings{limit: c.set.limit, concurrency: c.set.concurrency}
	for _, o := range opts {
		o(&rs)
	}
	if rs.limit <= 0 {
		return nil, fmt.Errorf("graph: recursion limit %d: it must be at least 1", rs.limit)
	}
	r := &run[S]{c: c, ctx: ctx, limit: rs.limit, conc: rs.concurrency, thread: rs.thread, kinds: rs.kinds}
	if rs.thread != "" {
		if c.set.checkpointer == nil {
			return nil, fmt.Errorf("%w: graph.Thread(%q) needs a checkpointer; compile the graph with graph.WithCheckpointer", ErrNoCheckpointer, rs.thread)
		}
		r.cp = c.set.checkpointer
	}
	if parent, _ := ctx.Value(taskKey{}).(*taskInfo); parent != nil && parent.sink != nil {
		r.out, r.prefix = parent.sink, parent.path+"/"
	}
	r.planned = make([]int, len(c.nodes))
	r.routed = make([]int, len(c.nodes))
	for i := range c.nodes {
		r.planned[i], r.routed[i] = -1, -1
	}
	r.joinSeen = make([][]bool, len(c.joins))
	for i, j := range c.joins {
		r.joinSeen[i] = make([]bool, len(j.from))
	}
	return r, nil
}

// begin prepares a fresh run from input: on a thread whose last run finished,
// the input is merged into that run's final state.
func (r *run[S]) begin(in S) error {
	parent := ""
	r.state = in
	if r.cp != nil {
		prev, err := r.cp.Get(r.ctx, r.thread, "")
		switch {
		case errors.Is(err, ErrCheckpointNotFound):
		case err != nil:
			return fmt.Errorf("graph: loading thread %q: %w", r.thread, err)
		default:
			var st S
			if err := json.Unmarshal(prev.State, &st); err != nil {
				return fmt.Errorf("graph: decoding the state of thread %q (checkpoint %s): %w", r.thread, prev.ID, err)
			}
			r.c.mergeInput(&st, &in)
			r.state, parent = st, prev.ID
		}
	}
	for _, f := range r.c.fields {
		f.afterMerge(&r.state)
	}
	if err := r.plan(r.c.start, nil); err != nil {
		return err
	}
	r.tasks, r.next = r.next, r.tasks[:0]
	return r.checkpoint(parent)
}

// mergeInput writes in's non-zero fields into st through their reducers;
// fields without a handle are replaced when in sets them.
func (c *Compiled[S]) mergeInput(st, in *S) {
	handled := map[string]bool{}
	for _, f := range c.fields {
		f.mergeInput(st, in)
		handled[f.goName()] = true
	}
	sv, iv := reflect.ValueOf(st).Elem(), reflect.ValueOf(in).Elem()
	for i := range sv.NumField() {
		sf := sv.Type().Field(i)
		if !sf.IsExported() || handled[sf.Name] {
			continue
		}
		if v := iv.Field(i); !v.IsZero() {
			sv.Field(i).Set(v)
		}
	}
}

// resume prepares to continue the thread's newest checkpoint.
func (r *run[S]) resume() (done bool, err error) {
	if r.cp == nil {
		return false, fmt.Errorf("graph: Resume needs graph.Thread(id) and a checkpointer")
	}
	cp, err := r.cp.Get(r.ctx, r.thread, "")
	if errors.Is(err, ErrCheckpointNotFound) {
		return false, fmt.Errorf("%w: thread %q has no checkpoint", ErrNothingToResume, r.thread)
	}
	if err != nil {
		return false, fmt.Errorf("graph: loading thread %q: %w", r.thread, err)
	}
	if err := json.Unmarshal(cp.State, &r.state); err != nil {
		return false, fmt.Errorf("graph: decoding the state of thread %q (checkpoint %s): %w", r.thread, cp.ID, err)
	}
	r.step, r.cpID = cp.Step, cp.ID
	for _, jp := range cp.Joins {
		for ji, j := range r.c.joins {
			if r.c.nodes[j.to].name != jp.To {
				continue
			}
			for pos, src := range j.from {
				for _, s := range jp.Seen {
					if r.c.nodes[src].name == s {
						r.joinSeen[ji][pos] = true
					}
				}
			}
		}
	}
	for _, pt := range cp.Next {
		i, ok := r.c.byName[pt.Node]
		if !ok {
			return false, fmt.Errorf("graph: thread %q: the checkpoint refers to node %q, which this graph does not have", r.thread, pt.Node)
		}
		arg, err := r.c.decodeArg(pt.Node, pt.Arg)
		if err != nil {
			return false, fmt.Errorf("graph: thread %q: %w", r.thread, err)
		}
		r.tasks = append(r.tasks, task[S]{node: r.c.nodes[i], arg: arg})
	}
	for _, w := range cp.Writes {
		if w.Task < 0 || w.Task >= len(r.tasks) || r.tasks[w.Task].node.name != w.Node {
			return false, fmt.Errorf("graph: thread %q: checkpoint %s has a write for task %d (%s) that its next step does not have", r.thread, cp.ID, w.Task, w.Node)
		}
		u, err := r.c.decodeUpdate(w.Update)
		if err != nil {
			return false, fmt.Errorf("graph: thread %q: decoding the update of task %d (%s): %w", r.thread, w.Task, w.Node, err)
		}
		r.tasks[w.Task].upd, r.tasks[w.Task].done = u, true
	}
	return len(r.tasks) == 0, nil
}

// loop runs steps until no task is left.
func (r *run[S]) loop() error {
	for len(r.tasks) > 0 {
		if r.step >= r.limit {
			next := make([]string, len(r.tasks))
			for i, t := range r.tasks {
				next[i] = t.node.name
			}
			return &RecursionError{Limit: r.limit, Next: next}
		}
		r.step++
		if err := r.execute(); err != nil || r.stop {
			return err
		}
		if err := r.merge(); err != nil {
			return err
		}
		tasks := r.tasks
		r.next = r.next[:0]
		for i := range tasks {
			if err := r.plan(tasks[i].node, &tasks[i]); err != nil {
				return err
			}
		}
		r.planJoins()
		r.tasks, r.next = r.next, tasks
		if err := r.checkpoint(r.cpID); err != nil {
			return err
		}
		if r.emit != nil && r.wants(EventStep) && !r.emit(Event[S]{Kind: EventStep, Step: r.step, State: r.state}) {
			r.stop = true
			return nil
		}
	}
	return nil
}

// execute runs the step's unfinished tasks: inline when there is one and
// nobody streams this run, otherwise on goroutines, at most conc at a time.
func (r *run[S]) execute() error {
	pending := 0
	for i := range r.tasks {
		t := &r.tasks[i]
		t.info = taskInfo{path: r.prefix + t.node.name, step: r.step, index: i, sink: r.out}
		if !t.done {
			pending++
			if r.emit != nil && r.wants(EventTaskStart) && !r.emit(Event[S]{Kind: EventTaskStart, Step: r.step, Node: t.node.name, Task: i, Arg: t.arg}) {
				r.stop = true
				return nil
			}
		}
	}
	if pending == 0 {
		return nil
	}
	if pending == 1 && !r.ownSink {
		for i := range r.tasks {
			if t := &r.tasks[i]; !t.done {
				r.runTask(r.ctx, t)
				t.done = true
				if r.emit != nil && r.wants(EventTaskEnd) && !r.emit(Event[S]{Kind: EventTaskEnd, Step: r.step, Node: t.node.name, Task: i, Update: t.upd, Err: t.err}) {
					r.stop = true
				}
				return r.taskErr(t.err)
			}
		}
	}
	return r.parallel(pending)
}

func (r *run[S]) parallel(pending int) error {
	ctx, cancel := context.WithCancelCause(r.ctx)
	defer cancel(nil)
	queued := make([]int, 0, pending)
	for i := range r.tasks {
		if !r.tasks[i].done {
			queued = append(queued, i)
		}
	}
	workers := pending
	if r.conc > 0 && r.conc < workers {
		workers = r.conc
	}
	var (
		nextIdx  atomic.Int64
		wg       sync.WaitGroup
		finished chan int
	)
	if r.ownSink {
		finished = make(chan int, pending)
	}
	work := func() {
		defer wg.Done()
		for {
			k := int(nextIdx.Add(1)) - 1
			if k >= len(queued) {
				return
			}
			t := &r.tasks[queued[k]]
			if ctx.Err() != nil {
				t.err = context.Canceled // a sibling failed or the run stopped before this task began
			} else {
				r.runTask(ctx, t)
				if t.err != nil {
					cancel(t.err)
				}
			}
			if finished != nil {
				finished <- queued[k]
			}
		}
	}
	wg.Add(workers)
	for range workers {
		go work()
	}
	if finished != nil {
		r.drain(finished, pending, cancel)
	}
	wg.Wait()
	for _, i := range queued {
		r.tasks[i].done = true
	}
	if r.stop {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && r.ctx.Err() == nil {
		// The first failure cancelled the others: report it, not their
		// cancellation.
		for _, i := range queued {
			if err := r.tasks[i].err; err == cause {
				return r.taskErr(err)
			}
		}
		return r.taskErr(cause)
	}
	for _, i := range queued {
		if err := r.tasks[i].err; err != nil {
			return r.taskErr(err)
		}
	}
	return nil
}

// drain forwards Emit values and task ends to the stream until every task
// has finished. If the consumer stops, the step is cancelled and drain keeps
// collecting so that no task is left blocked.
func (r *run[S]) drain(finished chan int, n int, cancel context.CancelCauseFunc) {
	deliver := func(ev Event[S]) {
		if !r.stop && !r.emit(ev) {
			r.stop = true
			cancel(context.Canceled)
		}
	}
	flush := func() {
		for {
			select {
			case c := <-r.sink:
				if r.wants(EventCustom) {
					deliver(Event[S]{Kind: EventCustom, Step: c.step, Node: c.node, Task: c.task, Value: c.value})
				}
			default:
				return
			}
		}
	}
	for n > 0 {
		select {
		case c := <-r.sink:
			if r.wants(EventCustom) {
				deliver(Event[S]{Kind: EventCustom, Step: c.step, Node: c.node, Task: c.task, Value: c.value})
			}
		case i := <-finished:
			n--
			flush() // the task's own Emits happened before it finished
			if t := &r.tasks[i]; r.wants(EventTaskEnd) && !errors.Is(t.err, context.Canceled) {
				deliver(Event[S]{Kind: EventTaskEnd, Step: r.step, Node: t.node.name, Task: i, Update: t.upd, Err: t.err})
			}
		}
	}
	flush()
}

// taskErr turns a task's failure into the run's error: cancellation of the
// run is reported as such, not as a node failure.
func (r *run[S]) taskErr(err error) error {
	if err == nil {
		return nil
	}
	if r.ctx.Err() != nil {
		return fmt.Errorf("graph: run cancelled in step %d: %w", r.step, context.Cause(r.ctx))
	}
	return err
}

// runTask runs one task with its node's retry policy and timeout, recording
// its update and, with a checkpointer, saving it.
func (r *run[S]) runTask(ctx context.Context, t *task[S]) {
	n := t.node
	if t.info.sink != nil {
		t.tctx = taskCtx{Context: ctx, info: &t.info}
		ctx = &t.tctx
	}
	attempts := 1
	if n.retries {
		attempts = n.policy.MaxAttempts
	}
	for a := 1; ; a++ {
		upd, err := r.attempt(ctx, t)
		if err == nil {
			t.upd, t.err = upd, nil
			break
		}
		if a >= attempts || ctx.Err() != nil || !n.policy.RetryOn(err) {
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				t.err = err // the run or the step was cancelled: not this node's fault
			} else {
				t.err = &NodeError{Node: r.prefix + n.name, Step: r.step, Attempts: a, Err: err}
			}
			return
		}
		timer := time.NewTimer(n.policy.wait(a))
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			t.err = context.Cause(ctx)
			return
		}
	}
	if r.cp != nil {
		data, err := json.Marshal(t.upd)
		if err == nil {
			err = r.cp.PutWrites(r.ctx, r.thread, r.cpID, TaskWrite{Task: t.info.index, Node: n.name, Update: data})
		}
		if err != nil {
			t.err = &NodeError{Node: r.prefix + n.name, Step: r.step, Err: fmt.Errorf("saving its update to the checkpointer: %w", err)}
		}
	}
}

// attempt calls the node once, under its timeout, turning a panic into a
// *PanicError.
func (r *run[S]) attempt(ctx context.Context, t *task[S]) (upd Update[S], err error) {
	n := t.node
	if n.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, n.timeout, fmt.Errorf("%w after %s", ErrTimeout, n.timeout))
		defer cancel()
		defer func() {
			if err != nil && errors.Is(context.Cause(ctx), ErrTimeout) {
				err = fmt.Errorf("%w: %w", context.Cause(ctx), err)
			}
		}()
	}
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	return n.run(ctx, &r.state, t.arg)
}

// merge applies the step's updates to the state in task order.
func (r *run[S]) merge() error {
	r.setters = r.setters[:0]
	multi := len(r.tasks) > 1
	for i := range r.tasks {
		t := &r.tasks[i]
		for _, w := range t.upd.writes {
			f := w.field()
			if !r.c.hasField(f) {
				return &NodeError{Node: r.prefix + t.node.name, Step: r.step, Err: fmt.Errorf("it wrote field %s, which is not declared: pass its handle to graph.New", f.goName())}
			}
			if multi && w.op() == opSet {
				for _, s := range r.setters {
					if s.f == f && s.task != i {
						return &ConflictError{Field: f.goName(), Nodes: [2]string{r.tasks[s.task].node.name, t.node.name}, Step: r.step}
					}
				}
				r.setters = append(r.setters, setter[S]{f: f, task: i})
			}
			w.apply(&r.state)
		}
		if r.collect != nil {
			*r.collect = append(*r.collect, t.upd.writes...)
		}
	}
	for i := range r.tasks {
		for _, w := range r.tasks[i].upd.writes {
			w.field().afterMerge(&r.state)
		}
	}
	return nil
}

// plan schedules what follows node n (once per step, whatever number of its
// tasks ran) and what task t's Command asks for.
func (r *run[S]) plan(n *cnode[S], t *task[S]) error {
	round := r.step
	if n.idx >= 0 {
		if r.routed[n.idx] == round {
			n = nil // already routed this step
		} else {
			r.routed[n.idx] = round
		}
	}
	if n != nil {
		for _, to := range n.edges {
			r.schedule(to)
		}
		for _, b := range n.branches {
			route, err := r.route(b)
			if err != nil {
				return err
			}
			for _, name := range route.Nodes {
				if err := r.goTo(b.from, name, b.dests); err != nil {
					return err
				}
			}
			r.next = slices.Grow(r.next, len(route.Sends))
			for _, s := range route.Sends {
				if err := r.send(b.from, s, b.dests); err != nil {
					return err
				}
			}
		}
		for _, ref := range n.joinRefs {
			r.joinSeen[ref.join][ref.pos] = true
		}
	}
	if t != nil {
		from := t.node
		for _, name := range t.upd.gotos {
			if err := r.goTo(from.name, name, from.dests); err != nil {
				return err
			}
		}
		for _, s := range t.upd.sends {
			if err := r.send(from.name, s, from.dests); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *run[S]) planJoins() {
	for ji, seen := range r.joinSeen {
		all := true
		for _, s := range seen {
			all = all && s
		}
		if all {
			r.schedule(r.c.joins[ji].to)
			clear(seen)
		}
	}
}

func (r *run[S]) route(b *branch[S]) (route Route, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &NodeError{Node: r.prefix + b.from, Step: r.step, Err: fmt.Errorf("its router panicked: %w", &PanicError{Value: p, Stack: debug.Stack()})}
		}
	}()
	return b.route(r.state), nil
}

func (r *run[S]) schedule(idx int) {
	if idx == endIdx || r.planned[idx] == r.step {
		return
	}
	r.planned[idx] = r.step
	r.next = append(r.next, task[S]{node: r.c.nodes[idx]})
}

func (r *run[S]) goTo(from, name string, allowed []string) error {
	if len(allowed) > 0 && !contains(allowed, name) {
		return &RouteError{From: from, To: name, Reason: fmt.Sprintf("not among its declared destinations %v", allowed)}
	}
	if name == End {
		return nil
	}
	idx, ok := r.c.byName[name]
	switch {
	case !ok:
		return &RouteError{From: from, To: name, Reason: "no such node"}
	case r.c.nodes[idx].payload != nil:
		return &RouteError{From: from, To: name, Reason: fmt.Sprintf("it is a task node taking %s; reach it with a graph.Send", r.c.nodes[idx].payload)}
	}
	r.schedule(idx)
	return nil
}

func (r *run[S]) send(from string, s Send, allowed []string) error {
	if len(allowed) > 0 && !contains(allowed, s.Node) {
		return &RouteError{From: from, To: s.Node, Reason: fmt.Sprintf("Send to an undeclared destination (declared: %v)", allowed)}
	}
	idx, ok := r.c.byName[s.Node]
	switch {
	case !ok:
		return &RouteError{From: from, To: s.Node, Reason: "Send to a node that does not exist"}
	case r.c.nodes[idx].payload == nil:
		return &RouteError{From: from, To: s.Node, Reason: "Send to a node that is not a task node; add it with graph.AddTask"}
	}
	r.next = append(r.next, task[S]{node: r.c.nodes[idx], arg: s.Arg})
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkpoint stores the state between steps, when the run has a thread.
func (r *run[S]) checkpoint(parent string) error {
	if r.cp == nil {
		return nil
	}
	state, err := json.Marshal(r.state)
	if err != nil {
		return fmt.Errorf("graph: the state cannot be checkpointed as JSON: %w", err)
	}
	cp := &Checkpoint{Thread: r.thread, ID: newCheckpointID(r.step), Parent: parent, Step: r.step, State: state, Created: time.Now()}
	for _, t := range r.tasks {
		pt := PendingTask{Node: t.node.name}
		if t.node.payload != nil {
			if pt.Arg, err = json.Marshal(t.arg); err != nil {
				return fmt.Errorf("graph: the Send payload for %q cannot be checkpointed as JSON: %w", t.node.name, err)
			}
		}
		cp.Next = append(cp.Next, pt)
	}
	for ji, seen := range r.joinSeen {
		var names []string
		for pos, s := range seen {
			if s {
				names = append(names, r.c.nodes[r.c.joins[ji].from[pos]].name)
			}
		}
		if len(names) > 0 {
			cp.Joins = append(cp.Joins, JoinProgress{To: r.c.nodes[r.c.joins[ji].to].name, Seen: names})
		}
	}
	if err := r.cp.Put(r.ctx, cp); err != nil {
		return fmt.Errorf("graph: saving checkpoint of thread %q after step %d: %w", r.thread, r.step, err)
	}
	r.cpID = cp.ID
	return nil
}

func newCheckpointID(step int) string {
	return fmt.Sprintf("%06d-%x-%08x", step, time.Now().UnixNano(), rand.Uint32())
}

func (r *run[S]) wants(k EventKind) bool { return r.kinds == 0 || r.kinds&k != 0 }
