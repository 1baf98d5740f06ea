package graph

import "context"

// AddSubgraph adds sub, a compiled graph over the same state type, as one
// node. It runs on the parent's state and everything its nodes write is
// written to the parent's state, through the parent's reducers, when the
// subgraph finishes. Nodes inside it that call Emit reach the parent's
// stream as "name/inner" events; with StreamSubgraphs all its events do.
// In a checkpointed run the subgraph checkpoints under a namespace of its
// own (see Checkpoint.Namespace), so that a Resume after an interrupt
// inside it runs again only the inner tasks that had not finished.
func (g *Graph[S]) AddSubgraph(name string, sub *Compiled[S], opts ...NodeOption) *Graph[S] {
	if sub == nil {
		g.problems = append(g.problems, errorf("subgraph %q is nil", name))
		return g
	}
	n := g.addNode(name, func(ctx context.Context, s *S, _ any) (Update[S], error) {
		writes, err := sub.runCollect(ctx, *s)
		return Update[S]{writes: writes}, err
	}, nil, nil, opts)
	if n != nil {
		n.sub = true
	}
	return g
}

// AddMappedSubgraph adds sub, a compiled graph over another state type T, as
// one node: in builds the subgraph's input from the parent's state, and out
// turns the subgraph's final state into the parent's update.
func AddMappedSubgraph[S, T any](g *Graph[S], name string, sub *Compiled[T], in func(S) T, out func(T) Update[S], opts ...NodeOption) *Graph[S] {
	if sub == nil || in == nil || out == nil {
		g.problems = append(g.problems, errorf("subgraph %q: the graph and both mapping functions are required", name))
		return g
	}
	n := g.addNode(name, func(ctx context.Context, s *S, _ any) (Update[S], error) {
		final, err := sub.Invoke(ctx, in(*s))
		if err != nil {
			return Update[S]{}, err
		}
		return out(final), nil
	}, nil, nil, opts)
	if n != nil {
		n.sub = true
	}
	return g
}

// runCollect runs the graph from in and returns every write its nodes made,
// in merge order.
func (c *Compiled[S]) runCollect(ctx context.Context, in S) ([]Write[S], error) {
	r, err := c.newRun(ctx, nil)
	if err != nil {
		return nil, err
	}
	var writes []Write[S]
	r.collect, r.raw = &writes, true
	if r.save != nil {
		// Its steps' writes are what its parent merges: a Resume replays
		// them from the line of checkpoints, which exit stores whole.
		r.save.line = true
	}
	r.traceRun(RunInfo{Subgraph: true})
	if err = r.start(in); err == nil {
		err = r.loop()
	}
	err = r.flush(err)
	r.endTrace(err)
	if err != nil {
		return nil, err
	}
	return writes, nil
}
