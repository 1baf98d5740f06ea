package graph

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

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
