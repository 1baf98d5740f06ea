package graph

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Start and End are the virtual entry and exit of every graph: an edge from
// Start names the first node(s) to run; routing to End finishes a branch.
const (
	Start = "__start__"
	End   = "__end__"
)

// NodeFunc is a node over the state: it reads a copy of the state and returns
// the writes it wants merged. Slices and maps in the state are shared with
// other tasks and with stream consumers: treat them as read-only.
type NodeFunc[S any] func(ctx context.Context, s S) (Update[S], error)

// TaskFunc is a task node: its input is the Arg of a Send, not the state.
type TaskFunc[S, P any] func(ctx context.Context, arg P) (Update[S], error)

// Graph is a graph under construction. Add nodes and edges, then Compile.
// Mistakes are collected and reported together by Compile, each naming the
// node or edge at fault, so the building calls need no error checks.
// A Graph is not safe for concurrent use; the Compiled graph is.
type Graph[S any] struct {
	fields   []Field[S]
	nodes    map[string]*node[S]
	order    []string // node names in the order added
	edges    []edge
	branches []*branch[S]
	joins    []join
	problems []error
}

type node[S any] struct {
	name string
	// run executes the node for one task: arg is the Send payload of a task
	// node and nil for a state node.
	run func(ctx context.Context, s *S, arg any) (Update[S], error)
	// payload is the Arg type of a task node, nil for a state node.
	payload   reflect.Type
	decodeArg func(data []byte) (any, error)
	dests     []string // declared Command destinations
	retry     *RetryPolicy
	timeout   time.Duration
	hasTO     bool
	sub       bool       // a subgraph (drawn differently)
	deferred  bool       // Defer: runs when nothing else is pending
	cache     *cacheSpec // WithCachePolicy
}

type edge struct{ from, to string }

type branch[S any] struct {
	from    string
	route   Router[S]
	dests   []string
	payload reflect.Type // set by AddFanOut: the type its Sends carry
	fanTo   string
}

type join struct {
	from []string
	to   string
}

// New starts a graph over the state struct S. Pass every field handle that
// nodes write (see Value, Append, Reduce): the graph uses them to decode
// checkpointed updates and to merge a continuing thread's input.
func New[S any](fields ...Field[S]) *Graph[S] {
	g := &Graph[S]{nodes: map[string]*node[S]{}}
	seen := map[string]bool{}
	for _, f := range fields {
		if f == nil {
			g.problems = append(g.problems, fmt.Errorf("graph.New: a field handle is nil (declare it before the graph is built)"))
			continue
		}
		if seen[f.key()] {
			g.problems = append(g.problems, fmt.Errorf("graph.New: field %s is declared twice", f.goName()))
			continue
		}
		seen[f.key()] = true
		g.fields = append(g.fields, f)
	}
	return g
}

// NodeOption configures one node.
type NodeOption func(*nodeOptions)

type nodeOptions struct {
	retry   *RetryPolicy
	timeout time.Duration
	hasTO   bool
	dests   []string
	defer_  bool
	cache   *cacheSpec
}

// WithRetry retries the node on failure according to p (see RetryPolicy).
func WithRetry(p RetryPolicy) NodeOption { return func(o *nodeOptions) { o.retry = &p } }

// WithTimeout bounds each attempt of the node; an attempt that runs longer is
// cancelled and fails with an error matching ErrTimeout. Zero or negative
// turns off a graph-wide default timeout for this node.
func WithTimeout(d time.Duration) NodeOption {
	return func(o *nodeOptions) { o.timeout, o.hasTO = d, true }
}

// Destinations declares where the node's Commands (Update.Goto/Send) may lead.
// They are checked at run time and drawn as dashed edges; a node with
// destinations needs no outgoing edge.
func Destinations(nodes ...string) NodeOption {
	return func(o *nodeOptions) { o.dests = append(o.dests, nodes...) }
}

// Defer makes the node deferred (LangGraph's defer=True): when routed to,
// it waits until every other pending branch of the run has finished — no
// task but deferred ones is left — and then runs once, however many
// branches routed to it. Use it for a node that sums up a fan-out whose
// branches have different lengths. A checkpoint lists the deferred nodes
// waiting (Checkpoint.Deferred), so a resumed run keeps them. Only nodes
// on the state can be deferred, not task nodes (AddTask).
func Defer() NodeOption { return func(o *nodeOptions) { o.defer_ = true } }

// AddNode adds a node that runs on the state.
func (g *Graph[S]) AddNode(name string, fn NodeFunc[S], opts ...NodeOption) *Graph[S] {
	if fn == nil {
		g.problems = append(g.problems, fmt.Errorf("node %q: function is nil", name))
		return g
	}
	g.addNode(name, func(ctx context.Context, s *S, _ any) (Update[S], error) { return fn(ctx, *s) }, nil, nil, opts)
	return g
}

// AddTask adds a task node: it runs once per Send addressed to it, with the
// Send's Arg — of type P — as its input. Sends carrying another type are
// refused: at Compile for AddFanOut, at run time for routers and Commands.
func AddTask[S, P any](g *Graph[S], name string, fn TaskFunc[S, P], opts ...NodeOption) *Graph[S] {
	if fn == nil {
		g.problems = append(g.problems, fmt.Errorf("task node %q: function is nil", name))
		return g
	}
	pt := reflect.TypeFor[P]()
	run := func(ctx context.Context, _ *S, arg any) (Update[S], error) {
		p, ok := arg.(P)
		if !ok {
			if arg != nil || !isNilable(pt) {
				return Update[S]{}, &PayloadError{Node: name, Want: pt, Got: reflect.TypeOf(arg)}
			}
		}
		return fn(ctx, p)
	}
	decode := func(data []byte) (any, error) { return decodeJSON[P](data) }
	g.addNode(name, run, pt, decode, opts)
	return g
}

func isNilable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Map, reflect.Func, reflect.Chan:
		return true
	}
	return false
}

func (g *Graph[S]) addNode(name string, run func(context.Context, *S, any) (Update[S], error), payload reflect.Type, decode func([]byte) (any, error), opts []NodeOption) *node[S] {
	if err := checkName(name); err != nil {
		g.problems = append(g.problems, err)
		return nil
	}
	if _, dup := g.nodes[name]; dup {
		g.problems = append(g.problems, fmt.Errorf("node %q is added twice", name))
		return nil
	}
	var o nodeOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.defer_ && payload != nil {
		g.problems = append(g.problems, fmt.Errorf("task node %q: graph.Defer applies to nodes on the state, not to task nodes reached by Send", name))
	}
	if c := o.cache; c != nil && c.key != nil {
		in := payload
		if in == nil {
			in = reflect.TypeFor[S]()
		}
		if c.in != in && !(c.in.Kind() == reflect.Interface && in.Implements(c.in)) {
			g.problems = append(g.problems, fmt.Errorf("node %q: its CachePolicy's Key takes %s, and the node's input is %s (the state for AddNode, the payload for AddTask)", name, c.in, in))
		}
	}
	n := &node[S]{name: name, run: run, payload: payload, decodeArg: decode, dests: o.dests, retry: o.retry, timeout: o.timeout, hasTO: o.hasTO, deferred: o.defer_, cache: o.cache}
	g.nodes[name] = n
	g.order = append(g.order, name)
	return n
}

func checkName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("a node name is empty")
	case name == Start || name == End:
		return fmt.Errorf("node name %q is reserved (graph.Start/graph.End)", name)
	case strings.ContainsAny(name, "/\n\t"):
		return fmt.Errorf("node name %q must not contain '/' (reserved for subgraph paths) or control characters", name)
	}
	return nil
}

// AddEdge makes to run after from. from may be Start, to may be End. When
// several nodes of one step lead to the same node, it runs once.
func (g *Graph[S]) AddEdge(from, to string) *Graph[S] {
	g.edges = append(g.edges, edge{from: from, to: to})
	return g
}

// AddSequence chains nodes with edges: AddSequence(a, b, c) is a→b→c.
func (g *Graph[S]) AddSequence(nodes ...string) *Graph[S] {
	for i := 1; i < len(nodes); i++ {
		g.AddEdge(nodes[i-1], nodes[i])
	}
	return g
}

// AddJoin adds a waiting edge: to runs once after every node in from has run
// — in one step or across several — and then waits for all of them again.
func (g *Graph[S]) AddJoin(from []string, to string) *Graph[S] {
	if len(from) == 0 {
		g.problems = append(g.problems, fmt.Errorf("join into %q has no source nodes", to))
		return g
	}
	g.joins = append(g.joins, join{from: append([]string(nil), from...), to: to})
	return g
}

// AddConditional routes from a node through route, which may return any of
// dests (End allowed) and Sends to task nodes among them. A route to a node
// not in dests fails the run with a *RouteError. The router runs after the
// step in which from ran, on the merged state.
func (g *Graph[S]) AddConditional(from string, route Router[S], dests ...string) *Graph[S] {
	if route == nil {
		g.problems = append(g.problems, fmt.Errorf("conditional edge from %q: router is nil", from))
		return g
	}
	if len(dests) == 0 {
		g.problems = append(g.problems, fmt.Errorf("conditional edge from %q declares no destinations", from))
		return g
	}
	g.branches = append(g.branches, &branch[S]{from: from, route: route, dests: dests})
	return g
}

// AddFanOut is the typed map step of map-reduce: after from runs, fan turns
// the state into payloads and each becomes a Send to the task node to. The Go
// compiler checks fan's payload type; Compile checks that to is a task node
// taking P.
func AddFanOut[S, P any](g *Graph[S], from, to string, fan func(s S) []P) *Graph[S] {
	if fan == nil {
		g.problems = append(g.problems, fmt.Errorf("fan-out from %q: function is nil", from))
		return g
	}
	route := func(s S) Route {
		ps := fan(s)
		sends := make([]Send, len(ps))
		for i, p := range ps {
			sends[i] = Send{Node: to, Arg: p}
		}
		return Route{Sends: sends}
	}
	g.branches = append(g.branches, &branch[S]{from: from, route: route, dests: []string{to}, payload: reflect.TypeFor[P](), fanTo: to})
	return g
}
