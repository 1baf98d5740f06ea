package graph

import (
	"errors"
	"fmt"
	"reflect"
)

// ToParent is a Command to the parent graph (LangGraph's
// Command(graph=Command.PARENT)): a node inside a subgraph returns it as its
// error to end the subgraph and have u — an Update over the parent's state
// type P — applied by the parent as the update of the subgraph's node, its
// writes merged into the parent's state through the parent's reducers and
// its Goto and Send routed in the parent.
//
//	return graph.Update[Inner]{}, graph.ToParent(graph.Writes(Verdict.Set("escalate")).Goto("human"))
//
// The subgraph stops at the end of the step in which its node returned the
// Command: the writes of its steps are not handed to the parent (as in
// LangGraph, where the subgraph's output is replaced by the Command), and
// the subgraph node's retry policy does not retry it. The parent's node —
// made by AddSubgraph, AddMappedSubgraph, or a node that calls Invoke on
// the subgraph — checks u's Goto against its Destinations as it does for
// its own Commands; declare them to have the edges drawn. A Command whose
// type is not the parent's Update, or one returned by a node of a graph
// that is not a subgraph, fails the run with an error naming the node.
func ToParent[P any](u Update[P]) error {
	return &ParentCommand{update: u, typ: reflect.TypeFor[Update[P]]()}
}

// ParentCommand is the error ToParent returns, on its way from the
// subgraph's node to the parent graph. A run fails with it only when it
// reached no parent: its message then says so.
type ParentCommand struct {
	update any
	typ    reflect.Type
	// from is the run whose node returned it; the first run above it
	// applies it. node is that node's path.
	from any
	node string
}

func (e *ParentCommand) Error() string {
	if e.node == "" {
		return "graph: a Command to the parent graph (graph.ToParent) was returned outside a graph run"
	}
	return fmt.Sprintf("graph: node %q returned a Command to the parent graph (graph.ToParent), but its graph was run as a top-level graph, not as a subgraph: return the update itself to act on this graph", e.node)
}

// asParent returns the Command to the parent in err, if any.
func asParent(err error) *ParentCommand {
	if err == nil {
		return nil
	}
	var pc *ParentCommand
	if errors.As(err, &pc) {
		return pc
	}
	return nil
}

// fromChild handles err, the outcome of an attempt of task t, when it is a
// Command to the parent graph. own: t's node returned it, and the run must
// stop with it (its parent applies it); applied: a subgraph of t's node
// returned it, and upd is the update t takes from it — or, when its type is
// not this graph's Update, err says so.
func (r *run[S]) fromChild(t *task[S], err error) (upd Update[S], applied bool, own *ParentCommand, bad error) {
	pc := asParent(err)
	if pc == nil {
		return Update[S]{}, false, nil, nil
	}
	if pc.from == nil || pc.from == any(r) {
		pc.from, pc.node = r, r.prefix+t.node.name
		return Update[S]{}, false, pc, nil
	}
	u, ok := pc.update.(Update[S])
	if !ok {
		return Update[S]{}, false, nil, &NodeError{Node: r.prefix + t.node.name, Step: r.step,
			Err: fmt.Errorf("node %q of its subgraph returned a Command to the parent graph over %s, but this graph's updates are %s", pc.node, pc.typ, reflect.TypeFor[Update[S]]())}
	}
	return u, true, nil, nil
}
