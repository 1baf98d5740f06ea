package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RunOption configures one run (Invoke, Stream, Resume, ResumeStream).
// A Ref (Thread) is one.
type RunOption interface{ applyRun(*runSettings) }

// runFunc is a RunOption that is a function.
type runFunc func(*runSettings)

func (f runFunc) applyRun(r *runSettings) { f(r) }

type runSettings struct {
	thread      string
	ns          string
	limit       int
	concurrency int
	kinds       EventKind // bit set; 0 means all
	from        string    // Ref.At: the checkpoint to run from
	runID       string
	answers     []givenAnswer
	inputs      []any // InputWrites: each a []Write[S] of the caller's S
	runner      TaskRunner
	// PauseBefore and PauseAfter: set when the run has its own.
	before, after []string
	breaks        bool
	update        any // WithUpdate: a *pendingUpdate[S]
	onBusy        BusyStrategy
	durability    DurabilityMode
	setDurability bool
	subgraphs     bool // StreamSubgraphs
}

// PauseBefore sets the run's breakpoints before nodes, in place of the
// graph's (WithInterruptBefore): the run pauses before a step in which one
// of them would run. AllNodes ("*") names every node; no nodes, none. A
// Resume takes the breakpoints it is given, or the graph's.
func PauseBefore(nodes ...string) RunOption {
	return runFunc(func(r *runSettings) { r.before, r.breaks = append(r.before, nodes...), true })
}

// PauseAfter sets the run's breakpoints after nodes, in place of the
// graph's (WithInterruptAfter): the run pauses after a step in which one of
// them ran. AllNodes ("*") names every node; no nodes, none.
func PauseAfter(nodes ...string) RunOption {
	return runFunc(func(r *runSettings) { r.after, r.breaks = append(r.after, nodes...), true })
}

// RecursionLimit overrides the graph's recursion limit for one run: the
// number of steps this invocation may take (a Resume counts its own).
func RecursionLimit(steps int) RunOption { return runFunc(func(r *runSettings) { r.limit = steps }) }

// MaxConcurrency overrides the graph's bound on parallel tasks for one run,
// with the meaning of WithMaxConcurrency: 0 is DefaultMaxConcurrency and a
// negative n is no bound.
func MaxConcurrency(n int) RunOption { return runFunc(func(r *runSettings) { r.concurrency = n }) }

// RunID labels the checkpoints the run writes (Checkpoint.Run), so that an
// application can tell its runs apart in a thread's history.
func RunID(id string) RunOption { return runFunc(func(r *runSettings) { r.runID = id }) }

// InputWrites adds writes to the input of a run (Invoke or Stream): after
// the input struct's non-zero fields, they are applied in order through the
// fields' reducers, as if written by a node before the first step. They say
// what a struct cannot: "I wrote this field, even if it is the zero value" —
// Done.Set(false) or Loops.Set(0) on a continuing thread — and "replace this
// list" — Queries.Set(nil). The writes must be made by handles of the graph's
// own state type; Resume refuses them (edit a stored thread with UpdateState).
func InputWrites[S any](w ...Write[S]) RunOption {
	return runFunc(func(r *runSettings) { r.inputs = append(r.inputs, w) })
}

// run is one execution of a compiled graph.
type run[S any] struct {
	c     *Compiled[S]
	ctx   context.Context
	state S
	step  int
	limit int
	// base is the step the invocation started from: the recursion limit
	// counts the steps of this invocation (LangGraph's), not the thread's.
	base int
	conc int // bound on a step's tasks running at once; 0: none

	cp     Checkpointer
	thread string
	ns     string // the namespace of its checkpoints ("" but in a subgraph)
	cpID   string
	// lastCP is the checkpoint the run stored or loaded last (cpID's), for
	// the Checkpoint of its EventSteps.
	lastCP *Checkpoint
	from   string
	runID  string
	source CheckpointSource // of the next checkpoint written
	ran    []string         // nodes that ran in the step of checkpoint cpID
	paused *InterruptError  // set when this run paused

	// hitl and hitlKey: a subgraph run inherits its parent task's interrupt
	// state, so that its nodes' interrupts pause the parent's task.
	hitl    *hitl
	hitlKey string
	answers []givenAnswer
	inputs  []any // InputWrites
	update  any   // WithUpdate
	// carry: the next checkpoint stores the records of its tasks with it
	// (an edit keeps the pending step).
	carry bool
	// nested: a subgraph's run, writing under its parent run's hold of the
	// thread; keeper: a top-level run's hold (take, release).
	nested bool
	// within is what the task running a subgraph's run gave it (nil at
	// the top): the checkpoints of the runs above it.
	within *nestInfo
	onBusy BusyStrategy
	keeper *keeper

	// out is where tasks' Emit values go: this run's own sink when it is
	// streamed, the parent's when it is a subgraph of a streamed run, nil
	// otherwise.
	out    chan<- custom
	sink   chan custom // own sink, drained by this run
	prefix string      // path prefix of this run's nodes inside a parent graph

	emit  func(Event[S]) bool // nil when nobody streams this run
	kinds EventKind
	stop  bool // the stream's consumer broke out
	// raw: the input is the state as it is, not writes through the reducers
	// (a same-state subgraph starts from its parent's state).
	raw     bool
	ownSink bool // the run drains its own sink (it is streamed)
	// subgraphs: the events of its subgraphs' runs go up its stream
	// (StreamSubgraphs). up: a subgraph's run that passes its events up
	// the stream of the run at the top (emit is passUp), and so its own
	// subgraphs' events.
	subgraphs, up bool

	tasks, next []task[S]
	planned     []int    // per node: the planning round that scheduled it
	routed      []int    // per node: the planning round that routed it
	joinSeen    [][]bool // per join, per source
	setters     []setter[S]
	// deferred are the deferred nodes (Defer) routed to and waiting for
	// every other branch to finish, by index; nil in most runs.
	deferred []int
	collect  *[]Write[S] // same-state subgraph: every write, in merge order

	tr *runTrace // nil: no tracer in the run's context
	bp *breaks   // the run's breakpoints: the graph's, or its own

	runner TaskRunner // WithTaskRunner: tasks run elsewhere
	// save holds the writes of a run whose durability is not sync; nil
	// for sync runs and for readers.
	save *saver
	// ch tracks the channels of a checkpointing run (channels.go).
	ch *chans
}

// runTrace is a traced run's tracer, and the end of its run's trace. It is
// apart from run so that untraced runs stay as small as they were.
type runTrace struct {
	Tracer
	end func(error)
}

type setter[S any] struct {
	f    Field[S]
	task int
}

type task[S any] struct {
	id   string // its ID in the thread (with a checkpointer)
	node *cnode[S]
	arg  any
	upd  Update[S]
	err  error
	done bool
	info taskInfo

	// hold is what interrupts left of the task; nil for almost every task.
	hold *taskHold
	// failed is the error a stored record says the task failed with.
	failed string
	// subgraphs are the namespaces of the subgraph runs the task made.
	subgraphs []string
	// cacheKey is where the task's result goes in the node cache (nil
	// when its node has no cache policy); cached: its update came from
	// the cache.
	cacheKey *CacheKey
	cached   bool
}

// taskHold is a task's interrupt record. rec: the task has a record in the
// checkpointer (it was released from a breakpoint, or interrupted); pause:
// the interrupts of its last pause; answers: the answers given to them;
// intr: those still unanswered; paused: the task stopped at an interrupt in
// this run.
type taskHold struct {
	rec     bool
	pause   []PendingInterrupt
	answers []AnswerRecord
	intr    []PendingInterrupt
	paused  bool
}

// held returns the task's hold, making it on first use.
func (t *task[S]) held() *taskHold {
	if t.hold == nil {
		t.hold = new(taskHold)
	}
	return t.hold
}

// waiting returns the interrupts the task waits on.
func (t *task[S]) waiting() []PendingInterrupt {
	if t.hold == nil {
		return nil
	}
	return t.hold.intr
}

// paused reports whether the task stopped at an interrupt in this run.
func (t *task[S]) paused() bool { return t.hold != nil && t.hold.paused }

// taskCtx is a task's context: its step's context plus the task's identity,
// found by Emit and by nested graphs. It is made only for tasks that need it
// (a stream listens, or the run can be interrupted), and on the heap with
// its own copy of the identity: whatever the node handed the context to — an
// HTTP dial finishing in the background, a goroutine — may read it after the
// task, while the run reuses the task's slot for the next steps.
type taskCtx struct {
	context.Context
	info taskInfo
}

func (c *taskCtx) Value(key any) any {
	if _, ok := key.(taskKey); ok {
		return &c.info
	}
	return c.Context.Value(key)
}

func (c *Compiled[S]) newRun(ctx context.Context, opts []RunOption) (*run[S], error) {
	rs := runSettings{limit: c.set.limit, concurrency: c.set.concurrency}
	if len(opts) > 0 {
		// Options get a copy on the heap, so that a run without options
		// does not allocate its settings.
		p := new(runSettings)
		*p = rs
		for _, o := range opts {
			if o != nil {
				o.applyRun(p)
			}
		}
		rs = *p
	}
	if rs.limit <= 0 {
		return nil, fmt.Errorf("graph: recursion limit %d: it must be at least 1", rs.limit)
	}
	switch {
	case rs.concurrency == 0:
		rs.concurrency = DefaultMaxConcurrency
	case rs.concurrency < 0:
		rs.concurrency = 0 // no bound
	}
	if rs.ns != "" {
		return nil, fmt.Errorf("graph: a run starts in its thread's own namespace, not in %q: a subgraph's checkpoints are written by the run of its parent", rs.ns)
	}
	if rs.thread != "" && rs.runID == "" {
		rs.runID = newID()
	}
	r := &run[S]{c: c, ctx: ctx, limit: rs.limit, conc: rs.concurrency, thread: rs.thread, kinds: rs.kinds,
		from: rs.from, runID: rs.runID, answers: rs.answers, inputs: rs.inputs, update: rs.update, source: SourceInput, runner: rs.runner,
		onBusy: rs.onBusy, subgraphs: rs.subgraphs,
	}
	r.bp = &c.bp
	if rs.breaks {
		var unknown []string
		bp := c.breaksFor(rs.before, rs.after, func(_, name string) { unknown = append(unknown, strconv.Quote(name)) })
		if len(unknown) > 0 {
			return nil, fmt.Errorf("graph: PauseBefore/PauseAfter name nodes the graph does not have: %s (nodes: %s)", strings.Join(unknown, ", "), strings.Join(c.g.order, ", "))
		}
		if bp.any && rs.thread == "" {
			return nil, fmt.Errorf("graph: PauseBefore and PauseAfter pause the run for Resume: it needs graph.Thread(id) and a checkpointer")
		}
		r.bp = &bp
	}
	if cached := c.CachedNodes(); rs.runner != nil && len(cached) > 0 {
		return nil, fmt.Errorf("graph: node %q has a cache policy (graph.WithCachePolicy), which a run with a TaskRunner does not apply: compile the graph without cache policies to run it this way", cached[0])
	}
	if rs.runner != nil && r.bp.any {
		return nil, fmt.Errorf("graph: breakpoints (WithInterruptBefore, WithInterruptAfter, PauseBefore, PauseAfter) pause a run for Resume, which a run with a TaskRunner does not do: call graph.Interrupt in the node instead, which the runner resolves")
	}
	if t := TracerFrom(ctx); t != nil {
		r.tr = &runTrace{Tracer: t}
	}
	if rs.thread != "" {
		if c.set.checkpointer == nil {
			return nil, fmt.Errorf("%w: graph.Thread(%q) needs a checkpointer; compile the graph with graph.WithCheckpointer", ErrNoCheckpointer, rs.thread)
		}
		r.cp = c.set.checkpointer
	} else if rs.from != "" || len(rs.answers) > 0 {
		return nil, fmt.Errorf("graph: a checkpoint (Ref.At) and answers (graph.Answer, graph.AnswerFor) need graph.Thread(id): they refer to a stored thread")
	}
	if parent, _ := ctx.Value(taskKey{}).(*taskInfo); parent != nil {
		if parent.sink != nil {
			r.out, r.prefix = parent.sink, parent.path+"/"
		}
		if n := parent.nest; rs.thread == "" && n != nil && n.cp != nil {
			// A subgraph of a checkpointed task: it checkpoints in its
			// parent's thread, under its own namespace (nest.go).
			if rs.from != "" || len(rs.answers) > 0 || rs.update != nil || rs.breaks {
				return nil, fmt.Errorf("graph: a subgraph run inside task %q continues with its parent's thread; Ref.At, answers, WithUpdate and breakpoints are for top-level runs (give Resume the answers)", parent.path)
			}
			r.cp, r.thread, r.runID, r.ns, r.nested, r.within = n.cp, n.thread, n.runID, n.next(), true, n
			rs.durability, rs.setDurability = n.durability, true
		}
		if n := parent.nest; rs.thread == "" && n != nil && n.stream {
			if r.ns == "" {
				r.ns = n.next()
			}
			r.up, r.emit = true, r.passUp
		}
		if (r.cp == nil || r.nested) && parent.hi != nil {
			hi := parent.hi
			hi.root.mu.Lock()
			hi.subruns++
			r.hitl, r.hitlKey = hi.root, hi.key+"/"+parent.path+"#run"+strconv.Itoa(hi.subruns)
			hi.root.mu.Unlock()
			if r.prefix == "" {
				r.prefix = parent.path + "/"
			}
		}
	}
	if r.cp != nil {
		mode := c.set.durability
		if rs.setDurability {
			mode = rs.durability
		}
		switch mode {
		case DurabilitySync:
		case DurabilityAsync, DurabilityExit:
			r.save = newSaver(ctx, mode, r.cp, r.runID)
		default:
			return nil, fmt.Errorf("graph: durability mode %d: use DurabilitySync, DurabilityAsync or DurabilityExit", mode)
		}
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

// begin prepares a fresh run from input. The input is written through the
// reducers, as if from Start (LangGraph's input channel): its non-zero fields
// and then its InputWrites, onto the zero state — or, on a thread whose last
// run finished, onto that run's final state.
func (r *run[S]) begin(in S) error {
	if r.update != nil {
		return fmt.Errorf("graph: graph.WithUpdate edits a paused thread as Resume continues it; a run's input is its input struct and graph.InputWrites")
	}
	writes, err := r.inputWrites()
	if err != nil {
		return err
	}
	parent := ""
	r.state = in
	if !r.raw {
		// On the zero state, writing the input's non-zero fields through
		// Value and Append fields gives the input itself; only Reduce fields
		// need their merge function run.
		for _, f := range r.c.reduced {
			f.freshInput(&r.state)
		}
	}
	if r.cp != nil {
		prev, err := r.cp.Get(r.ctx, r.ref(r.from))
		switch {
		case errors.Is(err, ErrCheckpointNotFound) && r.from != "":
			return fmt.Errorf("%w: thread %q has no checkpoint %q", ErrCheckpointNotFound, r.thread, r.from)
		case errors.Is(err, ErrCheckpointNotFound):
		case err != nil:
			return fmt.Errorf("graph: loading thread %q: %w", r.thread, err)
		default:
			var st S
			if err := r.c.decodeState(prev, &st); err != nil {
				return err
			}
			r.c.mergeInput(&st, &in)
			r.state, parent = st, prev.ID
			r.allChanged(prev)
			if r.from != "" {
				if fork, err := r.isFork(prev.ID); err != nil {
					return err
				} else if fork {
					r.source = SourceFork
				}
			}
		}
	}
	for _, w := range writes {
		w.apply(&r.state)
	}
	for _, f := range r.c.fields {
		f.afterMerge(&r.state)
	}
	if err := r.plan(r.c.start, nil); err != nil {
		return err
	}
	r.releaseDeferred()
	r.tasks, r.next = r.next, r.tasks[:0]
	return r.checkpoint(parent)
}

// inputWrites returns the run's InputWrites, checked.
func (r *run[S]) inputWrites() ([]Write[S], error) {
	var out []Write[S]
	for _, in := range r.inputs {
		ws, ok := in.([]Write[S])
		if !ok {
			return nil, fmt.Errorf("graph: graph.InputWrites got writes of type %T, but this graph's state is %s: build them with the field handles of %s",
				in, reflect.TypeFor[S](), reflect.TypeFor[S]())
		}
		for _, w := range ws {
			if w == nil || !r.c.hasField(w.field()) {
				name := "<nil>"
				if w != nil {
					name = w.field().goName()
				}
				return nil, fmt.Errorf("graph: graph.InputWrites writes field %s, which is not declared: pass its handle to graph.New", name)
			}
		}
		out = append(out, ws...)
	}
	return out, nil
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

// resume prepares to continue the thread's newest checkpoint (or, with
// Thread(id).At, an older one, on a new branch): it applies the answers
// given, releases breakpoints and stores both before anything runs.
func (r *run[S]) resume() (done bool, err error) {
	if r.cp == nil {
		return false, fmt.Errorf("graph: Resume needs graph.Thread(id) and a checkpointer")
	}
	if len(r.inputs) > 0 {
		return false, fmt.Errorf("graph: graph.InputWrites is input for Invoke and Stream; Resume takes none: to change a stored thread's state as it resumes, use graph.WithUpdate")
	}
	cp, err := r.cp.Get(r.ctx, r.ref(r.from))
	switch {
	case errors.Is(err, ErrCheckpointNotFound) && r.from != "":
		return false, fmt.Errorf("%w: thread %q has no checkpoint %q", ErrNothingToResume, r.thread, r.from)
	case errors.Is(err, ErrCheckpointNotFound):
		return false, fmt.Errorf("%w: thread %q has no checkpoint", ErrNothingToResume, r.thread)
	case err != nil:
		return false, fmt.Errorf("graph: loading thread %q: %w", r.thread, err)
	}
	if r.from != "" && r.update == nil {
		fork, err := r.isFork(cp.ID)
		if err != nil {
			return false, err
		}
		if fork {
			if cp, err = r.forkFrom(cp); err != nil {
				return false, err
			}
		}
	}
	if err := r.load(cp); err != nil {
		return false, err
	}
	r.source = SourceLoop // the steps it runs; the input was the first run's
	if r.update != nil {
		// The update, the answers and the released breakpoints: one
		// checkpoint, one commit.
		if err := r.resumeUpdate(cp); err != nil {
			return false, err
		}
		if _, err := r.applyAnswers(); err != nil {
			return false, err
		}
		for _, i := range r.gated() {
			r.tasks[i].held().rec = true
		}
		if err := r.checkpoint(cp.ID); err != nil {
			return false, err
		}
		return len(r.tasks) == 0, nil
	}
	var records []TaskWrite
	changed, err := r.applyAnswers()
	if err != nil {
		return false, err
	}
	for _, i := range changed {
		t := &r.tasks[i]
		records = append(records, TaskWrite{Task: i, Node: t.node.name, Interrupts: t.hold.pause, Answers: t.hold.answers, Subgraphs: t.subgraphs})
	}
	for _, i := range r.gated() {
		r.tasks[i].held().rec = true
		records = append(records, TaskWrite{Task: i, Node: r.tasks[i].node.name})
	}
	if len(records) > 0 {
		if err := r.cp.PutWrites(r.ctx, r.ref(r.cpID), r.runID, records...); err != nil {
			return false, fmt.Errorf("graph: storing the answers and released breakpoints of thread %q: %w", r.thread, err)
		}
	}
	return len(r.tasks) == 0, nil
}

// isFork reports whether id is not the thread's newest checkpoint.
func (r *run[S]) isFork(id string) (bool, error) {
	newest, err := r.cp.Get(r.ctx, r.ref(""))
	if err != nil {
		return false, fmt.Errorf("graph: loading thread %q: %w", r.thread, err)
	}
	return newest.ID != id, nil
}

// forkFrom starts a branch at cp: a copy of it, without its task records,
// stored as the thread's newest checkpoint.
func (r *run[S]) forkFrom(cp *Checkpoint) (*Checkpoint, error) {
	fork := &Checkpoint{Format: cp.Format, Thread: r.thread, Namespace: r.ns, ID: newID(), Parent: cp.ID, Step: cp.Step,
		State: cp.State, Versions: cp.Versions, Joins: cp.Joins, Deferred: cp.Deferred, Created: time.Now(), Source: SourceFork, Run: r.runID}
	// The branch's tasks are new tasks: their interrupts and subgraphs are
	// not the old branch's.
	for i, pt := range cp.Next {
		fork.Next = append(fork.Next, PendingTask{ID: taskID(r.thread, r.ns, fork.ID, i, pt.Node), Node: pt.Node, Arg: pt.Arg})
	}
	if err := r.cp.Put(r.ctx, fork); err != nil {
		return nil, fmt.Errorf("graph: starting a branch of thread %q from checkpoint %s: %w", r.thread, cp.ID, err)
	}
	fork.Values = cp.Values // stored already: the fork names the same versions
	return fork, nil
}

// load sets the run up at checkpoint cp: its state, step, joins, pending
// tasks and what is recorded of them.
func (r *run[S]) load(cp *Checkpoint) error {
	if err := r.c.decodeState(cp, &r.state); err != nil {
		return err
	}
	r.resetChannels(cp)
	r.step, r.base, r.cpID, r.ran, r.lastCP = cp.Step, cp.Step, cp.ID, cp.Ran, cp
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
	r.deferred = r.deferred[:0]
	for _, name := range cp.Deferred {
		idx, ok := r.c.byName[name]
		if !ok || !r.c.nodes[idx].deferred {
			return fmt.Errorf("graph: thread %q: checkpoint %s has %q waiting as a deferred node, which this graph does not have as one (graph.Defer)", r.thread, cp.ID, name)
		}
		r.deferred = append(r.deferred, idx)
	}
	r.tasks = r.tasks[:0]
	for _, pt := range cp.Next {
		if _, ok := r.c.byName[pt.Node]; !ok {
			return fmt.Errorf("graph: thread %q: the checkpoint refers to node %q, which this graph does not have", r.thread, pt.Node)
		}
		if len(pt.Arg) > r.c.set.maxBytes {
			return r.c.tooLarge(fmt.Sprintf("the Send payload for %q in checkpoint %s of thread %q", pt.Node, cp.ID, r.thread), len(pt.Arg))
		}
		arg, err := r.c.decodeArg(pt.Node, pt.Arg)
		if err != nil {
			return fmt.Errorf("graph: thread %q: %w", r.thread, err)
		}
		r.tasks = append(r.tasks, task[S]{id: pt.ID, node: r.c.nodes[r.c.byName[pt.Node]], arg: arg})
	}
	for _, w := range cp.Writes {
		if w.Task < 0 || w.Task >= len(r.tasks) || r.tasks[w.Task].node.name != w.Node {
			return fmt.Errorf("graph: thread %q: checkpoint %s has a record of task %d (%s) that its next step does not have", r.thread, cp.ID, w.Task, w.Node)
		}
		t := &r.tasks[w.Task]
		if w.Finished() {
			if len(w.Update) > r.c.set.maxBytes {
				return r.c.tooLarge(fmt.Sprintf("the update of task %d (%s) in thread %q", w.Task, w.Node, r.thread), len(w.Update))
			}
			u, err := r.c.decodeUpdate(w.Update)
			if err != nil {
				return fmt.Errorf("graph: thread %q: decoding the update of task %d (%s): %w", r.thread, w.Task, w.Node, err)
			}
			t.upd, t.done, t.subgraphs, t.cached = u, true, w.Subgraphs, w.Cached
			if len(w.Interrupts) > 0 {
				t.hold = &taskHold{rec: true, pause: w.Interrupts, answers: w.Answers}
			}
			continue
		}
		t.hold = &taskHold{rec: true, pause: w.Interrupts, answers: w.Answers, intr: unanswered(w.Interrupts, w.Answers)}
		t.failed, t.subgraphs = w.Err, w.Subgraphs
	}
	return nil
}

// unanswered returns the interrupts of pause that answers do not answer.
func unanswered(pause []PendingInterrupt, answers []AnswerRecord) []PendingInterrupt {
	var out []PendingInterrupt
	for _, pi := range pause {
		if !slices.ContainsFunc(answers, func(a AnswerRecord) bool { return a.ID == pi.ID }) {
			out = append(out, pi)
		}
	}
	return out
}

// applyAnswers matches the answers given to Resume with the pending
// interrupts and returns the tasks whose records changed.
func (r *run[S]) applyAnswers() ([]int, error) {
	if len(r.answers) == 0 {
		return nil, nil
	}
	var waiting []PendingInterrupt
	for i := range r.tasks {
		waiting = append(waiting, r.tasks[i].waiting()...)
	}
	ids := func() string {
		if len(waiting) == 0 {
			return "none is"
		}
		var b strings.Builder
		for i, pi := range waiting {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s (node %q)", pi.ID, pi.Node)
		}
		return b.String()
	}
	var changed []int
	answered := map[string]bool{}
	for _, ga := range r.answers {
		id := ga.id
		if !ga.byID {
			if len(waiting) != 1 || len(r.answers) != 1 {
				return nil, fmt.Errorf("%w: graph.Answer answers the one pending interrupt, but thread %q has %d waiting for an answer (%s); answer each with graph.AnswerFor(id, value)",
					ErrBadAnswer, r.thread, len(waiting), ids())
			}
			id = waiting[0].ID
		}
		if answered[id] {
			return nil, fmt.Errorf("%w: interrupt %s is answered twice", ErrBadAnswer, id)
		}
		answered[id] = true
		ti := -1
		for i := range r.tasks {
			if slices.ContainsFunc(r.tasks[i].waiting(), func(pi PendingInterrupt) bool { return pi.ID == id }) {
				ti = i
			}
		}
		if ti < 0 {
			return nil, fmt.Errorf("%w: thread %q has no interrupt %q waiting for an answer; waiting: %s", ErrBadAnswer, r.thread, id, ids())
		}
		data, err := json.Marshal(ga.value)
		if err != nil {
			return nil, fmt.Errorf("graph: the answer to interrupt %s cannot be encoded as JSON: %w", id, err)
		}
		if len(data) > r.c.set.maxBytes {
			return nil, r.c.tooLarge("the answer to interrupt "+id, len(data))
		}
		h := r.tasks[ti].hold
		h.answers = append(slices.Clip(h.answers), AnswerRecord{ID: id, Value: data, Time: time.Now()})
		h.intr = unanswered(h.pause, h.answers)
		if !slices.Contains(changed, ti) {
			changed = append(changed, ti)
		}
	}
	return changed, nil
}

// gated returns the tasks that a breakpoint holds: tasks of an
// InterruptBefore node, or every task after a step in which an
// InterruptAfter node ran — unless already released.
func (r *run[S]) gated() []int {
	if r.cp == nil || r.nested || !r.bp.any {
		return nil
	}
	after := r.afterNode()
	var out []int
	for i, t := range r.tasks {
		if (t.hold == nil || !t.hold.rec) && !t.done && (after != "" || r.bp.before[t.node.idx]) {
			out = append(out, i)
		}
	}
	return out
}

// afterNode is the first node of the last step that has an InterruptAfter.
func (r *run[S]) afterNode() string {
	for _, name := range r.ran {
		if i, ok := r.c.byName[name]; ok && r.bp.after[i] {
			return name
		}
	}
	return ""
}

// breakpoints describes the interrupts of the gated tasks.
func (r *run[S]) breakpoints(gated []int) []PendingInterrupt {
	if len(gated) == 0 {
		return nil
	}
	if after := r.afterNode(); after != "" {
		return []PendingInterrupt{{ID: breakpointID(r.thread, r.cpID, InterruptAfter, after), Kind: InterruptAfter, Node: after, Task: -1, Step: r.step + 1}}
	}
	var out []PendingInterrupt
	for _, i := range gated {
		name := r.tasks[i].node.name
		if !slices.ContainsFunc(out, func(pi PendingInterrupt) bool { return pi.Node == name }) {
			out = append(out, PendingInterrupt{ID: breakpointID(r.thread, r.cpID, InterruptBefore, name), Kind: InterruptBefore, Node: name, Task: i, Step: r.step + 1})
		}
	}
	return out
}

// pending lists what the step after the current checkpoint waits on.
func (r *run[S]) pending() []PendingInterrupt {
	out := r.breakpoints(r.gated())
	for i := range r.tasks {
		if t := &r.tasks[i]; !t.done {
			out = append(out, t.waiting()...)
		}
	}
	return out
}

// loop runs steps until no task is left.
func (r *run[S]) loop() error {
	for len(r.tasks) > 0 {
		if r.ctx.Err() != nil {
			return fmt.Errorf("graph: run cancelled before step %d: %w", r.step+1, context.Cause(r.ctx))
		}
		if r.step-r.base >= r.limit {
			next := make([]string, len(r.tasks))
			for i, t := range r.tasks {
				next[i] = t.node.name
			}
			return &RecursionError{Limit: r.limit, Next: next, Thread: r.thread}
		}
		if gated := r.gated(); len(gated) > 0 {
			return r.pauseAt(r.breakpoints(gated))
		}
		r.step++
		var err error
		if r.tr == nil {
			err = r.superstep(r.ctx)
		} else {
			ctx, end := r.tr.StartStep(r.ctx, StepInfo{Step: r.step, Tasks: len(r.tasks)})
			err = r.superstep(ctx)
			end(err)
		}
		if err != nil || r.stop {
			return err
		}
	}
	return nil
}

// traceRun starts the run's trace when a Tracer is attached: the run goes
// on under the context the tracer returns.
func (r *run[S]) traceRun(info RunInfo) {
	if r.tr == nil {
		return
	}
	info.Thread, info.RunID = r.thread, r.runID
	r.ctx, r.tr.end = r.tr.StartRun(r.ctx, info)
}

// endTrace ends the run's trace with its outcome.
func (r *run[S]) endTrace(err error) {
	if r.tr != nil && r.tr.end != nil {
		r.tr.end(err)
		r.tr.end = nil
	}
}

// superstep runs one step under ctx: its tasks, the merge of their updates,
// the planning of the next step and its checkpoint. The run stops when it
// returns an error or sets r.stop.
func (r *run[S]) superstep(ctx context.Context) error {
	if err := r.execute(ctx); err != nil || r.stop {
		return err
	}
	if err := r.interrupted(); err != nil {
		r.step--
		return err
	}
	if err := r.merge(); err != nil {
		return err
	}
	tasks := r.tasks
	if r.cp != nil {
		r.ran = r.ran[:0:0]
		for i := range tasks {
			if name := tasks[i].node.name; !slices.Contains(r.ran, name) {
				r.ran = append(r.ran, name)
			}
		}
	}
	r.next = r.next[:0]
	for i := range tasks {
		if err := r.plan(tasks[i].node, &tasks[i]); err != nil {
			return err
		}
	}
	r.planJoins()
	r.releaseDeferred()
	r.tasks, r.next = r.next, tasks
	if err := r.checkpoint(r.cpID); err != nil {
		return err
	}
	if r.emit != nil && r.wants(EventStep) && !r.emit(Event[S]{Kind: EventStep, Step: r.step, State: r.state, Checkpoint: r.stepCheckpoint()}) {
		r.stop = true
		return nil
	}
	return nil
}

// interrupted stops the run when tasks of the step are paused at
// interrupts; the step's finished tasks are stored already.
func (r *run[S]) interrupted() error {
	var intr []PendingInterrupt
	paused := false
	for i := range r.tasks {
		if t := &r.tasks[i]; t.paused() || len(t.waiting()) > 0 {
			paused = true
			intr = append(intr, t.waiting()...)
		}
	}
	if !paused {
		return nil
	}
	if r.cp == nil || r.nested {
		// A subgraph run: its interrupts are recorded by the parent's task,
		// which this error pauses.
		if r.up && r.hitl != nil {
			r.emit(Event[S]{Kind: EventInterrupt, Step: r.step, State: r.state, Interrupts: r.hitl.raisedUnder(r.hitlKey + "/")})
		}
		return &InterruptError{}
	}
	return r.pauseAt(intr)
}

func (r *run[S]) pauseAt(intr []PendingInterrupt) error {
	r.paused = &InterruptError{Thread: r.thread, Interrupts: intr}
	return r.paused
}

// execute runs the step's unfinished tasks: inline when there is one and
// nobody streams this run, otherwise on goroutines, at most conc at a time.
func (r *run[S]) execute(ctx context.Context) error {
	if r.runner != nil {
		return r.executeRemote(ctx)
	}
	for i := range r.tasks {
		r.tasks[i].info = taskInfo{path: r.prefix + r.tasks[i].node.name, step: r.step, index: i, sink: r.out}
	}
	if r.c.set.cache != nil {
		if err := r.fromCache(ctx); err != nil || r.stop {
			return err
		}
	}
	pending := 0
	for i := range r.tasks {
		t := &r.tasks[i]
		if t.runnable() {
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
			if t := &r.tasks[i]; t.runnable() {
				r.runTask(ctx, t)
				t.done = true
				if r.endReported(t) && !r.emit(r.endEvent(i)) {
					r.stop = true
				}
				return r.taskErr(t.err)
			}
		}
	}
	return r.parallel(ctx, pending)
}

func (r *run[S]) parallel(ctx context.Context, pending int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	queued := make([]int, 0, pending)
	for i := range r.tasks {
		if r.tasks[i].runnable() {
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
			} else if r.endReported(t) {
				r.emit(r.endEvent(queued[k])) // a subgraph's run passing its events up: it goes on
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
		if !r.stop && r.wants(ev.Kind) && !r.emit(ev) {
			r.stop = true
			cancel(context.Canceled)
		}
	}
	flush := func() {
		for {
			select {
			case c := <-r.sink:
				deliver(eventOf[S](c))
			default:
				return
			}
		}
	}
	for n > 0 {
		select {
		case c := <-r.sink:
			deliver(eventOf[S](c))
		case i := <-finished:
			n--
			flush() // the task's own Emits happened before it finished
			if r.endReported(&r.tasks[i]) {
				deliver(r.endEvent(i))
			}
		}
	}
	flush()
}

// endReported reports whether the run's stream reports the end of task
// t: it is streamed and wants it, and t neither paused at an interrupt
// nor was cancelled.
func (r *run[S]) endReported(t *task[S]) bool {
	return r.emit != nil && r.wants(EventTaskEnd) && !t.paused() && !errors.Is(t.err, context.Canceled)
}

// endEvent is the EventTaskEnd of task i.
func (r *run[S]) endEvent(i int) Event[S] {
	t := &r.tasks[i]
	return Event[S]{Kind: EventTaskEnd, Step: r.step, Node: t.node.name, Task: i, Update: t.upd, Err: t.err}
}

// streamsSubgraphs reports whether the events of the subgraph runs of the
// run's tasks go up its stream.
func (r *run[S]) streamsSubgraphs() bool { return (r.subgraphs || r.up) && r.out != nil }

// taskErr turns a task's failure into the run's error: cancellation of the
// run is reported as such, not as a node failure.
func (r *run[S]) taskErr(err error) error {
	if err == nil {
		return nil
	}
	if r.ctx.Err() != nil {
		// Not a node failure: the node's own error, without the
		// NodeError around it, stays reachable.
		var ne *NodeError
		for errors.As(err, &ne) {
			err = ne.Err
		}
		return &cancelledError{msg: fmt.Sprintf("graph: run cancelled in step %d: %v", r.step, context.Cause(r.ctx)),
			cause: context.Cause(r.ctx), node: err}
	}
	return err
}

// cancelledError is a task's failure in a cancelled run: it reads as the
// cancellation, and both the cause and the node's own error (a typed error
// carrying what the node had done, say) stay reachable with errors.Is and
// errors.As; node is nil when the node failed with no error of its own.
type cancelledError struct {
	msg         string
	cause, node error
}

func (e *cancelledError) Error() string { return e.msg }
func (e *cancelledError) Unwrap() []error {
	if e.node == nil {
		return []error{e.cause}
	}
	return []error{e.cause, e.node}
}

// runnable reports whether the task runs in this step: it has not finished
// and waits for no answer.
func (t *task[S]) runnable() bool { return !t.done && len(t.waiting()) == 0 }

// runTask runs one task with its node's retry policy and timeout, recording
// its outcome — its update, or the interrupts it stopped at — and, with a
// checkpointer, storing it.
func (r *run[S]) runTask(ctx context.Context, t *task[S]) {
	n := t.node
	var h *hitl
	switch {
	case r.hitl != nil:
		t.info.hi = &taskHITL{root: r.hitl, key: r.hitlKey + "/" + t.info.path + "@" + strconv.Itoa(r.step) + "." + strconv.Itoa(t.info.index)}
	case r.cp != nil:
		base := t.id
		if base == "" { // a task of a checkpoint written before tasks had IDs
			base = r.thread + "\x00" + r.cpID + "\x00" + strconv.Itoa(t.info.index)
		}
		h = &hitl{base: base, node: n.name, task: t.info.index, step: r.step}
		if t.hold != nil {
			h.answers = t.hold.answers
		}
		t.info.hi = &taskHITL{root: h}
	}
	if r.cp != nil || r.streamsSubgraphs() {
		t.info.nest = r.newNest(t)
	}
	if t.info.sink != nil || t.info.hi != nil || t.info.nest != nil {
		ctx = &taskCtx{Context: ctx, info: t.info}
	}
	attempts := 1
	if n.retries {
		attempts = n.policy.MaxAttempts
	}
	var prev error // the last attempt's error, for the tracer
	for a := 1; ; a++ {
		if hi := t.info.hi; hi != nil {
			hi.calls, hi.subruns, hi.stopped = 0, 0, false
		}
		if n := t.info.nest; n != nil {
			n.runs = 0
		}
		var upd Update[S]
		var err error
		if r.tr == nil {
			upd, err = r.attempt(ctx, t)
		} else {
			upd, err = r.tracedAttempt(ctx, t, a, prev)
			prev = err
		}
		if n := t.info.nest; n != nil {
			t.subgraphs = n.namespaces()
		}
		if h != nil && len(h.rejected) > 0 {
			// An answer of the wrong type: set it aside, keep the interrupt
			// waiting, and fail the run saying so.
			hold := t.held()
			hold.answers = h.answers
			hold.intr = unanswered(hold.pause, hold.answers)
			t.err = &NodeError{Node: r.prefix + n.name, Step: r.step, Err: h.rejected[0]}
			r.record(t, TaskWrite{Err: t.err.Error()})
			return
		}
		if h != nil && len(h.raised) > 0 || h == nil && t.info.hi != nil && (t.info.hi.stopped || errors.Is(err, ErrInterrupted)) {
			t.upd, t.err = Update[S]{}, nil
			hold := t.held()
			hold.paused = true
			if h != nil {
				// The record keeps every interrupt the task raised, answered
				// or not, for History.
				hold.pause, hold.answers = addInterrupts(hold.pause, h.raised), h.answers
				hold.intr = unanswered(hold.pause, hold.answers)
				r.record(t, TaskWrite{})
			}
			return
		}
		if err == nil {
			t.upd, t.err = upd, nil
			break
		}
		if pu, ok, own, bad := r.fromChild(t, err); ok {
			t.upd, t.err = pu, nil
			break
		} else if own != nil {
			// A Command to the parent graph: this run stops with it, and
			// the parent's task that runs this graph applies it.
			t.err = own
			return
		} else if bad != nil {
			t.err = bad
			if r.cp != nil {
				r.record(t, TaskWrite{Err: t.err.Error()})
			}
			return
		}
		if a >= attempts || ctx.Err() != nil || !n.policy.RetryOn(err) {
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				t.err = err // the run or the step was cancelled: not this node's fault
				return
			}
			t.err = &NodeError{Node: r.prefix + n.name, Step: r.step, Attempts: a, Err: err}
			if r.cp != nil {
				r.record(t, TaskWrite{Err: t.err.Error()})
			}
			return
		}
		d := n.policy.wait(a)
		if d <= 0 {
			continue // no wait; the context was checked above
		}
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			t.err = context.Cause(ctx)
			return
		}
	}
	if r.cp != nil || t.cacheKey != nil {
		data, err := json.Marshal(t.upd)
		switch {
		case err != nil:
			t.err = &NodeError{Node: r.prefix + n.name, Step: r.step, Err: fmt.Errorf("its update cannot be checkpointed or cached as JSON: %w", err)}
		case r.cp != nil && len(data) > r.c.set.maxBytes:
			t.err = &NodeError{Node: r.prefix + n.name, Step: r.step, Err: r.c.tooLarge("its update", len(data))}
		default:
			if err := r.toCache(ctx, t, data); err != nil {
				t.err = &NodeError{Node: r.prefix + n.name, Step: r.step, Err: err}
				return
			}
			if r.cp != nil {
				r.record(t, TaskWrite{Update: data})
			}
		}
	}
}

// addInterrupts appends to have the interrupts of raised it does not have.
func addInterrupts(have, raised []PendingInterrupt) []PendingInterrupt {
	out := slices.Clip(have)
	for _, pi := range raised {
		if !slices.ContainsFunc(out, func(x PendingInterrupt) bool { return x.ID == pi.ID }) {
			out = append(out, pi)
		}
	}
	return out
}

// record stores a task's outcome — w's update or error, with the
// interrupts the task raised and their answers — and fails the task when
// it cannot be stored.
func (r *run[S]) record(t *task[S], w TaskWrite) {
	w.Task, w.Node, w.Time, w.Subgraphs = t.info.index, t.node.name, time.Now(), t.subgraphs
	if t.hold != nil {
		w.Interrupts, w.Answers = t.hold.pause, t.hold.answers
	}
	if err := r.putWrites(r.ref(r.cpID), w); err != nil {
		if t.hold != nil {
			t.hold.paused, t.hold.intr = false, nil
		}
		t.err = &NodeError{Node: r.prefix + t.node.name, Step: r.step, Err: fmt.Errorf("saving its outcome to the checkpointer: %w", err)}
	}
}

// tracedAttempt is attempt observed by the run's Tracer as attempt a of
// the task, prev being the previous attempt's error.
func (r *run[S]) tracedAttempt(ctx context.Context, t *task[S], a int, prev error) (Update[S], error) {
	ctx, end := r.tr.StartTask(ctx, TaskInfo{Node: t.info.path, Step: r.step, Index: t.info.index,
		Send: t.node.payload != nil, Attempt: a, RetryReason: prev})
	upd, err := r.attempt(ctx, t)
	end(err)
	return upd, err
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

// merge applies the step's updates to the state in task order. A field that
// one task Sets takes that task's writes only — LangGraph's Overwrite: the
// other tasks' writes to it in this step are dropped, so the result does not
// depend on where the setting task falls in the task order.
func (r *run[S]) merge() error {
	r.setters = r.setters[:0]
	if len(r.tasks) > 1 {
		for i := range r.tasks {
			t := &r.tasks[i]
			for _, w := range t.upd.writes {
				if w.op() != opSet {
					continue
				}
				f := w.field()
				for _, s := range r.setters {
					if s.f == f && s.task != i {
						return &ConflictError{Field: f.goName(), Nodes: [2]string{r.tasks[s.task].node.name, t.node.name}, Step: r.step}
					}
				}
				r.setters = append(r.setters, setter[S]{f: f, task: i})
			}
		}
	}
	for i := range r.tasks {
		t := &r.tasks[i]
		for _, w := range t.upd.writes {
			f := w.field()
			if !r.c.hasField(f) {
				return &NodeError{Node: r.prefix + t.node.name, Step: r.step, Err: fmt.Errorf("it wrote field %s, which is not declared: pass its handle to graph.New", f.goName())}
			}
			if len(r.setters) > 0 && r.overwritten(f, i) {
				continue
			}
			w.apply(&r.state)
			if r.ch != nil {
				r.touched(f)
			}
			if r.collect != nil {
				*r.collect = append(*r.collect, w)
			}
		}
	}
	for i := range r.tasks {
		for _, w := range r.tasks[i].upd.writes {
			w.field().afterMerge(&r.state)
		}
	}
	return nil
}

// overwritten reports whether another task than task Sets f in this step.
func (r *run[S]) overwritten(f Field[S], task int) bool {
	for _, s := range r.setters {
		if s.f == f && s.task != task {
			return true
		}
	}
	return false
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

// releaseDeferred schedules the deferred nodes waiting when the next step has no
// other task: every other branch has finished.
func (r *run[S]) releaseDeferred() {
	if len(r.next) > 0 || len(r.deferred) == 0 {
		return
	}
	for _, idx := range r.deferred {
		r.next = append(r.next, task[S]{node: r.c.nodes[idx]})
	}
	r.deferred = r.deferred[:0]
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
	if r.c.nodes[idx].deferred {
		if !slices.Contains(r.deferred, idx) {
			r.deferred = append(r.deferred, idx)
		}
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
	cp := &Checkpoint{Thread: r.thread, Namespace: r.ns, ID: newID(), Parent: parent, Step: r.step,
		Created: time.Now(), Source: r.source, Ran: r.ran, Run: r.runID}
	size, err := r.encodeChannels(cp)
	if err != nil {
		return err
	}
	if size > r.c.set.maxBytes {
		return r.c.tooLarge(fmt.Sprintf("the state after step %d", r.step), size)
	}
	for i := range r.tasks {
		t := &r.tasks[i]
		if t.id == "" {
			t.id = taskID(cp.Thread, cp.Namespace, cp.ID, i, t.node.name)
		}
		pt := PendingTask{ID: t.id, Node: t.node.name}
		if t.node.payload != nil {
			if pt.Arg, err = json.Marshal(t.arg); err != nil {
				return fmt.Errorf("graph: the Send payload for %q cannot be checkpointed as JSON: %w", t.node.name, err)
			}
			if len(pt.Arg) > r.c.set.maxBytes {
				return r.c.tooLarge(fmt.Sprintf("the Send payload for %q", t.node.name), len(pt.Arg))
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
	for _, idx := range r.deferred {
		cp.Deferred = append(cp.Deferred, r.c.nodes[idx].name)
	}
	if r.carry {
		if cp.Writes, err = r.records(); err != nil {
			return err
		}
	}
	if err := r.put(cp); err != nil {
		return fmt.Errorf("graph: saving checkpoint of thread %q after step %d: %w", r.thread, r.step, err)
	}
	r.cpID, r.source, r.carry, r.lastCP = cp.ID, SourceLoop, false, cp
	return nil
}

// stepCheckpoint describes the checkpoint the run's state is stored as
// (Event.Checkpoint); nil when the run has no checkpointer.
func (r *run[S]) stepCheckpoint() *StepCheckpoint {
	cp := r.lastCP
	if r.cp == nil || cp == nil {
		return nil
	}
	sc := &StepCheckpoint{Ref: cp.Ref(), Parent: cp.Parent, Step: cp.Step, Source: cp.Source, Run: cp.Run, Next: slices.Clone(cp.Next)}
	for n := r.within; n != nil; n = n.outer {
		sc.Parents = append(sc.Parents, n.at)
	}
	slices.Reverse(sc.Parents)
	return sc
}

// ref is the reference to checkpoint id of the run's thread and namespace.
func (r *run[S]) ref(id string) Ref { return Ref{Thread: r.thread, Namespace: r.ns, Checkpoint: id} }

func (r *run[S]) wants(k EventKind) bool { return r.kinds == 0 || r.kinds&k != 0 }
