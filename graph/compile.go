package graph

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"time"
)

// Option configures Compile.
type Option func(*settings)

type settings struct {
	checkpointer Checkpointer
	limit        int
	concurrency  int
	defaults     nodeOptions
	hasDefaults  bool
	before       []string
	after        []string
	maxBytes     int
	lease        time.Duration
	durability   DurabilityMode
	cache        Cache
}

// DefaultRecursionLimit is the number of steps a run may take unless
// WithRecursionLimit or RecursionLimit says otherwise.
const DefaultRecursionLimit = 100

// WithCheckpointer stores the progress of runs that name a Thread.
func WithCheckpointer(cp Checkpointer) Option { return func(s *settings) { s.checkpointer = cp } }

// WithRecursionLimit sets the default number of steps a run may take.
func WithRecursionLimit(steps int) Option { return func(s *settings) { s.limit = steps } }

// DefaultMaxConcurrency is how many tasks of one step run at once unless
// WithMaxConcurrency or MaxConcurrency says otherwise. It bounds wide Send
// fan-outs — a step of 10,000 tasks runs on this many goroutines, not on
// 10,000 — while leaving the usual handful of parallel LLM calls unbounded
// in practice.
const DefaultMaxConcurrency = 64

// WithMaxConcurrency bounds how many tasks of one step run at once: n > 0 is
// the bound, 0 means DefaultMaxConcurrency, and a negative n means no bound
// (one goroutine per task).
func WithMaxConcurrency(n int) Option { return func(s *settings) { s.concurrency = n } }

// WithInterruptBefore pauses every run before a step in which one of nodes
// would run (a static breakpoint, LangGraph's interrupt_before); AllNodes
// ("*") names them all. The step's checkpoint is stored first; Resume runs
// it. It needs WithCheckpointer. PauseBefore sets them for one run
// (LangGraph's per-run interrupt_before).
func WithInterruptBefore(nodes ...string) Option {
	return func(s *settings) { s.before = append(s.before, nodes...) }
}

// WithInterruptAfter pauses every run after a step in which one of nodes
// ran, once the step is stored; Resume goes on with the next step; AllNodes
// ("*") names them all. A run whose last step ran the node simply finishes.
// It needs WithCheckpointer. PauseAfter sets them for one run.
func WithInterruptAfter(nodes ...string) Option {
	return func(s *settings) { s.after = append(s.after, nodes...) }
}

// WithMaxCheckpointBytes bounds the encoded state, each Send payload, each
// task update and each answer that runs write to or read from the
// checkpointer (default DefaultMaxCheckpointBytes). Stored data over the
// bound is refused with ErrCheckpointTooLarge before it is decoded.
func WithMaxCheckpointBytes(n int) Option { return func(s *settings) { s.maxBytes = n } }

// WithNodeDefaults sets graph-wide defaults for retry and timeout, used by
// every node that does not set its own.
func WithNodeDefaults(opts ...NodeOption) Option {
	return func(s *settings) {
		for _, o := range opts {
			o(&s.defaults)
		}
		s.hasDefaults = true
	}
}

// Compiled is a validated graph, ready to run. It is immutable and safe for
// concurrent runs.
type Compiled[S any] struct {
	g       *Graph[S] // the definition, for drawing
	fields  []Field[S]
	reduced []Field[S] // the Reduce fields, whose merge a fresh run's input goes through
	nodes   []*cnode[S]
	byName  map[string]int
	start   *cnode[S]
	joins   []cjoin
	set     settings

	bp breaks // WithInterruptBefore and WithInterruptAfter
}

// breaks are the static breakpoints of a graph or a run, by node index.
type breaks struct {
	before, after []bool
	any           bool
}

// AllNodes, given to WithInterruptBefore, WithInterruptAfter or their
// per-run forms, names every node of the graph (LangGraph's "*").
const AllNodes = "*"

// breaksFor resolves the node names of breakpoints, AllNodes included;
// bad gets each unknown name.
func (c *Compiled[S]) breaksFor(before, after []string, bad func(what, name string)) breaks {
	b := breaks{before: make([]bool, len(c.nodes)), after: make([]bool, len(c.nodes))}
	for _, bp := range []struct {
		names []string
		set   []bool
		what  string
	}{{before, b.before, "WithInterruptBefore"}, {after, b.after, "WithInterruptAfter"}} {
		for _, name := range bp.names {
			if name == AllNodes {
				for i := range bp.set {
					bp.set[i] = true
				}
				b.any = b.any || len(bp.set) > 0
				continue
			}
			i, ok := c.byName[name]
			if !ok {
				bad(bp.what, name)
				continue
			}
			bp.set[i], b.any = true, true
		}
	}
	return b
}

// endIdx is the index End resolves to.
const endIdx = -1

type cnode[S any] struct {
	*node[S]
	idx      int
	edges    []int
	branches []*branch[S]
	joinRefs []joinRef
	policy   RetryPolicy
	retries  bool
	timeout  time.Duration
}

type joinRef struct{ join, pos int }

type cjoin struct {
	to   int
	from []int
}

// Compile validates the graph and returns it ready to run. The error is a
// *CompileError listing every problem, each naming the node or edge at fault.
func (g *Graph[S]) Compile(opts ...Option) (*Compiled[S], error) {
	st := settings{limit: DefaultRecursionLimit, maxBytes: DefaultMaxCheckpointBytes, lease: DefaultLease}
	for _, o := range opts {
		o(&st)
	}
	problems := slices.Clone(g.problems)
	bad := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }
	if st.limit <= 0 {
		bad("recursion limit %d: it must be at least 1", st.limit)
	}
	if st.maxBytes <= 0 {
		bad("checkpoint size limit %d: it must be at least 1 byte", st.maxBytes)
	}
	if st.lease < 10*time.Millisecond {
		bad("lease %s: it must be at least 10ms (graph.WithLease)", st.lease)
	}

	if st.defaults.cache != nil {
		bad("graph.WithNodeDefaults: a cache policy is set per node, for the node's input type: pass graph.WithCachePolicy to AddNode or AddTask")
	}
	if st.cache == nil {
		for _, name := range g.order {
			if g.nodes[name].cache != nil {
				bad("node %q has a cache policy (graph.WithCachePolicy), and the graph has no cache: compile it with graph.WithCache(graph.NewMemoryCache()) or another Cache", name)
			}
		}
	}
	c := &Compiled[S]{g: g, fields: g.fields, byName: map[string]int{}, set: st}
	for _, f := range g.fields {
		if f.reduces() {
			c.reduced = append(c.reduced, f)
		}
	}
	for i, name := range g.order {
		n := g.nodes[name]
		cn := &cnode[S]{node: n, idx: i}
		retry, timeout, hasTO := n.retry, n.timeout, n.hasTO
		if retry == nil && st.hasDefaults {
			retry = st.defaults.retry
		}
		if !hasTO && st.hasDefaults {
			timeout = st.defaults.timeout
		}
		if retry != nil {
			cn.policy, cn.retries = retry.withDefaults(), true
		}
		cn.timeout = max(timeout, 0)
		c.nodes = append(c.nodes, cn)
		c.byName[name] = i
	}
	c.start = &cnode[S]{node: &node[S]{name: Start}, idx: endIdx - 1}
	from := func(name, what string) *cnode[S] {
		switch name {
		case Start:
			return c.start
		case End:
			bad("%s starts at graph.End; nothing runs after End", what)
			return nil
		}
		i, ok := c.byName[name]
		if !ok {
			bad("%s starts at unknown node %q", what, name)
			return nil
		}
		return c.nodes[i]
	}
	to := func(name, what string) (int, bool) {
		switch name {
		case End:
			return endIdx, true
		case Start:
			bad("%s leads to graph.Start; Start can only begin edges", what)
			return 0, false
		}
		i, ok := c.byName[name]
		if !ok {
			bad("%s leads to unknown node %q", what, name)
		}
		return i, ok
	}

	for _, e := range g.edges {
		what := fmt.Sprintf("edge %s → %s", e.from, e.to)
		src := from(e.from, what)
		dst, ok := to(e.to, what)
		if src == nil || !ok {
			continue
		}
		if dst != endIdx && c.nodes[dst].payload != nil {
			bad("%s: %q is a task node taking %s, so it runs only from Sends; route to it with AddFanOut or a conditional edge returning graph.Send", what, e.to, c.nodes[dst].payload)
			continue
		}
		if !slices.Contains(src.edges, dst) {
			src.edges = append(src.edges, dst)
		}
	}
	for _, b := range g.branches {
		what := fmt.Sprintf("conditional edge from %s", b.from)
		src := from(b.from, what)
		okAll := true
		for _, d := range b.dests {
			if _, ok := to(d, what); !ok {
				okAll = false
			}
		}
		if b.payload != nil {
			what = fmt.Sprintf("fan-out %s → %s", b.from, b.fanTo)
			if i, ok := c.byName[b.fanTo]; ok {
				switch tn := c.nodes[i]; {
				case tn.payload == nil:
					bad("%s: %q is not a task node; Sends go to nodes added with graph.AddTask", what, b.fanTo)
					okAll = false
				case tn.payload != b.payload:
					bad("%s: payload type mismatch: the fan-out sends %s, but task node %q takes %s", what, b.payload, b.fanTo, tn.payload)
					okAll = false
				}
			}
		}
		if src != nil && okAll {
			src.branches = append(src.branches, b)
		}
	}
	for _, j := range g.joins {
		what := fmt.Sprintf("join %v → %s", j.from, j.to)
		dst, ok := to(j.to, what)
		if ok && dst == endIdx {
			bad("%s: a join must lead to a node, not End", what)
			ok = false
		}
		if ok && c.nodes[dst].payload != nil {
			bad("%s: %q is a task node; a join can only lead to a node over the state", what, j.to)
			ok = false
		}
		var srcs []*cnode[S]
		for _, f := range j.from {
			src := from(f, what)
			switch {
			case src == nil:
				ok = false
			case src == c.start:
				bad("%s: Start cannot be a join source", what)
				ok = false
			case slices.Contains(srcs, src):
				bad("%s: source %q is listed twice", what, f)
				ok = false
			default:
				srcs = append(srcs, src)
			}
		}
		if !ok {
			continue
		}
		cj := cjoin{to: dst}
		for pos, src := range srcs {
			cj.from = append(cj.from, src.idx)
			src.joinRefs = append(src.joinRefs, joinRef{join: len(c.joins), pos: pos})
		}
		c.joins = append(c.joins, cj)
	}
	for _, n := range c.nodes {
		for _, d := range n.dests {
			to(d, fmt.Sprintf("destination of node %q", n.name))
		}
	}
	c.bp = c.breaksFor(st.before, st.after, func(what, name string) { bad("%s names unknown node %q", what, name) })
	for _, bp := range []struct {
		names []string
		what  string
	}{{st.before, "WithInterruptBefore"}, {st.after, "WithInterruptAfter"}} {
		if len(bp.names) > 0 && st.checkpointer == nil {
			bad("%s needs a checkpointer to pause and resume runs: add graph.WithCheckpointer", bp.what)
		}
	}

	if len(c.start.edges) == 0 && len(c.start.branches) == 0 {
		bad("no edge from graph.Start: add one, e.g. AddEdge(graph.Start, %q)", firstOr(g.order, "first_node"))
	}
	// Reachability and ways out, over every edge as declared — an edge
	// already reported as invalid still counts here, so one mistake is not
	// reported three times.
	adj := map[string][]string{}
	for _, e := range g.edges {
		adj[e.from] = append(adj[e.from], e.to)
	}
	for _, b := range g.branches {
		adj[b.from] = append(adj[b.from], b.dests...)
	}
	for _, j := range g.joins {
		for _, f := range j.from {
			adj[f] = append(adj[f], j.to)
		}
	}
	for _, name := range g.order {
		adj[name] = append(adj[name], g.nodes[name].dests...)
	}
	reached := map[string]bool{Start: true}
	queue := []string{Start}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, m := range adj[n] {
			if !reached[m] {
				reached[m] = true
				queue = append(queue, m)
			}
		}
	}
	for _, name := range g.order {
		if !reached[name] {
			bad("node %q is unreachable from graph.Start", name)
		}
		if len(adj[name]) == 0 {
			bad("node %q has no way out: add an edge from it (to graph.End if the run should finish there), a conditional edge, or Destinations for its Commands", name)
		}
	}
	if len(problems) > 0 {
		return nil, &CompileError{Problems: problems}
	}
	return c, nil
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

func (c *Compiled[S]) fieldByKey(key string) Field[S] {
	for _, f := range c.fields {
		if f.key() == key {
			return f
		}
	}
	return nil
}

func (c *Compiled[S]) hasField(f Field[S]) bool {
	for _, g := range c.fields {
		if g == f {
			return true
		}
	}
	return false
}

func (c *Compiled[S]) decodeArg(nodeName string, data json.RawMessage) (any, error) {
	i, ok := c.byName[nodeName]
	if !ok {
		return nil, fmt.Errorf("the checkpoint refers to node %q, which this graph does not have", nodeName)
	}
	n := c.nodes[i]
	if n.payload == nil {
		if len(data) > 0 && string(data) != "null" {
			return nil, fmt.Errorf("the checkpoint has a payload for node %q, which is not a task node", nodeName)
		}
		return nil, nil
	}
	arg, err := n.decodeArg(data)
	if err != nil {
		return nil, fmt.Errorf("decoding the %s payload of task node %q: %w", n.payload, nodeName, err)
	}
	return arg, nil
}

// decodeState decodes a checkpoint's state into st, after checking its
// format and size: the whole state of a format-1 checkpoint, or its
// channels — the rest channel first, then each field.
func (c *Compiled[S]) decodeState(cp *Checkpoint, st *S) error {
	if cp.Format > CheckpointFormat {
		return fmt.Errorf("%w: checkpoint %s of thread %q has format %d, and this version of deepgraph reads up to %d: upgrade it to continue this thread",
			ErrCheckpointFormat, cp.ID, cp.Thread, cp.Format, CheckpointFormat)
	}
	if len(cp.State) > 0 || len(cp.Versions) == 0 {
		if len(cp.State) > c.set.maxBytes {
			return c.tooLarge(fmt.Sprintf("the state of checkpoint %s of thread %q", cp.ID, cp.Thread), len(cp.State))
		}
		if err := json.Unmarshal(cp.State, st); err != nil {
			return fmt.Errorf("graph: decoding the state of thread %q (checkpoint %s) into %T: %w", cp.Thread, cp.ID, *st, err)
		}
		return nil
	}
	size := 0
	for _, cv := range cp.Values {
		size += len(cv.Value)
	}
	if size > c.set.maxBytes {
		return c.tooLarge(fmt.Sprintf("the state of checkpoint %s of thread %q", cp.ID, cp.Thread), size)
	}
	if len(cp.Values) != len(cp.Versions) {
		return fmt.Errorf("graph: checkpoint %s of thread %q names %d channels but came with %d values: the store lost some", cp.ID, cp.Thread, len(cp.Versions), len(cp.Values))
	}
	var zero S
	*st = zero
	for _, cv := range cp.Values {
		if cv.Channel != RestChannel {
			continue
		}
		if err := json.Unmarshal(cv.Value, st); err != nil {
			return fmt.Errorf("graph: decoding the state of thread %q (checkpoint %s) into %T: %w", cp.Thread, cp.ID, *st, err)
		}
	}
	for _, cv := range cp.Values {
		if cv.Channel == RestChannel {
			continue
		}
		f := c.fieldByKey(cv.Channel)
		if f == nil {
			return fmt.Errorf("graph: checkpoint %s of thread %q has a value for field %q, which %T does not declare (graph.New)", cp.ID, cp.Thread, cv.Channel, *st)
		}
		if err := f.channel().decode(st, cv.Value); err != nil {
			return fmt.Errorf("graph: decoding field %q of thread %q (checkpoint %s): %w", cv.Channel, cp.Thread, cp.ID, err)
		}
	}
	return nil
}

func (c *Compiled[S]) tooLarge(what string, n int) error {
	return fmt.Errorf("%w: %s is %d bytes, over the limit of %d (graph.WithMaxCheckpointBytes)", ErrCheckpointTooLarge, what, n, c.set.maxBytes)
}

func decodeJSON[P any](data []byte) (any, error) {
	var p P
	if len(data) == 0 {
		return p, nil
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	return p, nil
}

// Nodes returns the graph's node names in the order they were added.
func (c *Compiled[S]) Nodes() []string { return slices.Clone(c.g.order) }

// payloadOf returns the Arg type of a task node (nil for other nodes).
func (c *Compiled[S]) payloadOf(name string) reflect.Type {
	if i, ok := c.byName[name]; ok {
		return c.nodes[i].payload
	}
	return nil
}
