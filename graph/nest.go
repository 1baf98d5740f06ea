package graph

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
)

// A subgraph — a graph run by a task of a checkpointed run, through
// AddSubgraph, AddMappedSubgraph or a node that calls Invoke on another
// compiled graph — checkpoints in its parent's thread, under a namespace of
// its own: "node:task-id", prefixed by its parent's namespace and "|" when
// the parent is itself a subgraph (LangGraph's checkpoint_ns). The k-th
// subgraph run of one task (k ≥ 2) adds "#k". A namespace belongs to one
// task, so when the task runs again — on Resume after an interrupt inside
// the subgraph, or on a retry after a failure — its subgraph continues its
// own newest checkpoint instead of starting over: the inner nodes that
// finished do not run again.

// nestInfo is what a task gives the subgraph runs it starts: in a
// checkpointed run, the store, thread and run they write under; their
// namespaces; and, when the run streams its subgraphs' events
// (StreamSubgraphs), that they pass theirs up.
type nestInfo struct {
	cp     Checkpointer // nil: the run does not checkpoint
	thread string
	runID  string
	ns     string // the task's namespace: [parent's ns "|"] node ":" task ID
	// durability is the parent run's mode, which its subgraphs keep.
	durability DurabilityMode
	// stream: the subgraph runs pass their events up (StreamSubgraphs);
	// in is the namespace of the task's own run, which its Emits carry
	// ("" at the top).
	stream bool
	in     string
	// at is the checkpoint of the task's run whose pending step holds the
	// task; outer is the nestInfo its run was given (nil at the top).
	at    Ref
	outer *nestInfo

	mu     sync.Mutex
	runs   int      // subgraph runs started by the task's current attempt
	spaces []string // namespaces of every subgraph run of the task
}

// newNest is the nestInfo for task t of run r.
func (r *run[S]) newNest(t *task[S]) *nestInfo {
	id := t.id
	if id == "" && r.cp == nil { // a run streaming its subgraphs' events
		id = newID()
	}
	ns := t.node.name + ":" + id
	if r.ns != "" {
		ns = r.ns + "|" + ns
	}
	n := &nestInfo{cp: r.cp, thread: r.thread, runID: r.runID, ns: ns, spaces: t.subgraphs, at: r.ref(r.cpID), outer: r.within}
	if r.streamsSubgraphs() {
		n.stream, n.in = true, r.ns
	}
	if r.save != nil {
		n.durability = r.save.mode
	}
	return n
}

// next returns the namespace of the task's next subgraph run.
func (n *nestInfo) next() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.runs++
	ns := n.ns
	if n.runs > 1 {
		ns += "#" + strconv.Itoa(n.runs)
	}
	if !slices.Contains(n.spaces, ns) {
		n.spaces = append(slices.Clip(n.spaces), ns)
	}
	return ns
}

// namespaces returns the namespaces of the task's subgraph runs so far.
func (n *nestInfo) namespaces() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.spaces
}

// start begins the run from in — or, for a subgraph in a checkpointed
// run, enters its namespace (enter). A subgraph's run that passes its
// events up reports the state it starts from, as a stream does.
func (r *run[S]) start(in S) error {
	var err error
	if !r.nested {
		err = r.begin(in)
	} else {
		_, err = r.enter(in)
	}
	if err == nil && r.up {
		r.emit(Event[S]{Kind: EventStep, Step: r.step, State: r.state, Checkpoint: r.stepCheckpoint()})
	}
	return err
}

// enter starts a subgraph's run in its namespace: it continues the
// namespace's newest checkpoint when an earlier attempt of the parent's
// task left one, and begins from in otherwise. done reports that the
// subgraph had finished: r.state is its final state.
func (r *run[S]) enter(in S) (done bool, err error) {
	prev, err := r.cp.Get(r.ctx, r.ref(""))
	switch {
	case errors.Is(err, ErrCheckpointNotFound):
		return false, r.begin(in)
	case err != nil:
		return false, fmt.Errorf("graph: loading subgraph %s of thread %q: %w", r.ns, r.thread, err)
	}
	if r.collect != nil {
		if err := r.replay(prev); err != nil {
			return false, err
		}
	}
	if err := r.load(prev); err != nil {
		return false, err
	}
	r.source = SourceLoop
	return len(r.tasks) == 0, nil
}

// replay collects the writes of the steps the subgraph completed before
// newest (its line of checkpoints, followed by Parent): a same-state
// subgraph hands its parent every write its nodes made, and those of the
// steps an earlier attempt completed are in their checkpoints' task records.
func (r *run[S]) replay(newest *Checkpoint) error {
	all, err := r.cp.List(r.ctx, r.ref(""), 0)
	if err != nil {
		return fmt.Errorf("graph: listing subgraph %s of thread %q: %w", r.ns, r.thread, err)
	}
	byID := make(map[string]*Checkpoint, len(all))
	for _, cp := range all {
		byID[cp.ID] = cp
	}
	var line []*Checkpoint // oldest first, newest excluded
	for id := newest.Parent; id != ""; {
		cp := byID[id]
		if cp == nil {
			return fmt.Errorf("graph: subgraph %s of thread %q: checkpoint %s follows %s, which is missing (was the thread pruned?)", r.ns, r.thread, newest.ID, id)
		}
		line = append(line, cp)
		id = cp.Parent
	}
	slices.Reverse(line)
	for _, cp := range line {
		r.tasks = r.tasks[:0]
		for _, pt := range cp.Next {
			i, ok := r.c.byName[pt.Node]
			if !ok {
				return fmt.Errorf("graph: subgraph %s of thread %q: checkpoint %s refers to node %q, which this graph does not have", r.ns, r.thread, cp.ID, pt.Node)
			}
			r.tasks = append(r.tasks, task[S]{node: r.c.nodes[i]})
		}
		for _, w := range cp.Writes {
			if !w.Finished() {
				continue
			}
			if w.Task < 0 || w.Task >= len(r.tasks) || r.tasks[w.Task].node.name != w.Node {
				return fmt.Errorf("graph: subgraph %s of thread %q: checkpoint %s has a record of task %d (%s) that its next step does not have", r.ns, r.thread, cp.ID, w.Task, w.Node)
			}
			u, err := r.c.decodeUpdate(w.Update)
			if err != nil {
				return fmt.Errorf("graph: subgraph %s of thread %q: decoding the update of task %d (%s): %w", r.ns, r.thread, w.Task, w.Node, err)
			}
			r.tasks[w.Task].upd = u
		}
		if err := r.merge(); err != nil {
			return err
		}
	}
	r.tasks = r.tasks[:0]
	return nil
}
