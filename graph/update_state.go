package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// UpdateOption configures UpdateState and WithUpdate.
type UpdateOption func(*updateSettings)

type updateSettings struct{ asNode string }

// AsNode makes an update stand for node's output: the node's waiting tasks
// are done with (their interrupts answered by the update), and what runs
// next is what follows the node.
func AsNode(node string) UpdateOption { return func(s *updateSettings) { s.asNode = node } }

// UpdateState edits a thread's state: it applies u to the state of a
// checkpoint (the newest when at.Checkpoint is "") through the fields'
// reducers and stores the result as a new checkpoint, which Resume
// continues.
//
// The newest checkpoint's pending step is kept: its finished tasks are not
// run again, and its tasks that asked something keep their interrupts and
// answers, so that a Resume with the answer goes on where the thread
// paused. u's Goto and Send add tasks to it. With AsNode(n), the update
// stands for node n's output: n's unfinished tasks are done with — the
// update answers them — the other tasks that were pending only because of
// the routing so far are dropped, and what follows n, its edges and routers
// on the new state, joins the step (a node already pending there, waiting
// for an answer, is kept as it is).
//
// Editing an older checkpoint starts a branch (SourceFork) whose pending
// step runs again in full, as new tasks; the newest checkpoint's branch
// stays in History. UpdateState refuses a thread a run holds
// (*ThreadBusyError).
func (c *Compiled[S]) UpdateState(ctx context.Context, at Ref, u Update[S], opts ...UpdateOption) (Snapshot[S], error) {
	var set updateSettings
	for _, o := range opts {
		o(&set)
	}
	r, err := c.reader(ctx, at)
	if err != nil {
		return Snapshot[S]{}, err
	}
	r.runID = newID() // the edit is a run of its own: it holds the thread while it writes
	if err := r.take(); err != nil {
		return Snapshot[S]{}, err
	}
	defer r.release()
	cp, err := r.cp.Get(r.ctx, at)
	if err != nil {
		if errors.Is(err, ErrCheckpointNotFound) {
			return Snapshot[S]{}, fmt.Errorf("%w: thread %s has no checkpoint%s to update", err, at, quoted(" ", at.Checkpoint))
		}
		return Snapshot[S]{}, fmt.Errorf("graph: loading thread %s: %w", at, err)
	}
	if err := r.load(cp); err != nil {
		return Snapshot[S]{}, err
	}
	if err := r.edit(cp, u, set.asNode); err != nil {
		return Snapshot[S]{}, err
	}
	if err := r.checkpoint(cp.ID); err != nil {
		return Snapshot[S]{}, err
	}
	return c.State(ctx, r.ref(r.cpID))
}

// WithUpdate makes a Resume apply u to the paused thread's state first, as
// UpdateState does (opts: AsNode), in the same commit as the answers: it is
// LangGraph's Command(resume=…, update=…, goto=…) —
//
//	run.Resume(ctx, graph.Thread(id), graph.Answer(ok), graph.WithUpdate(graph.Writes(note.Set(n)).Goto("publish")))
//
// u's writes go through the fields' reducers before the paused tasks run
// again; its Goto and Send add tasks to the step that resumes.
func WithUpdate[S any](u Update[S], opts ...UpdateOption) RunOption {
	var set updateSettings
	for _, o := range opts {
		o(&set)
	}
	return runFunc(func(r *runSettings) { r.update = &pendingUpdate[S]{u: u, asNode: set.asNode} })
}

// pendingUpdate is WithUpdate's update, for a run of state S.
type pendingUpdate[S any] struct {
	u      Update[S]
	asNode string
}

// edit applies u, as asNode when set, to the run loaded at cp, keeping the
// pending step (see UpdateState), and prepares the next checkpoint to
// carry the kept tasks' records.
func (r *run[S]) edit(cp *Checkpoint, u Update[S], asNode string) error {
	c := r.c
	var from *cnode[S]
	if asNode != "" {
		i, ok := c.byName[asNode]
		if !ok {
			return fmt.Errorf("graph: an update as node %q: the graph has no such node (nodes: %s)", asNode, strings.Join(c.g.order, ", "))
		}
		from = c.nodes[i]
	}
	for _, w := range u.writes {
		if !c.hasField(w.field()) {
			return fmt.Errorf("graph: the update writes field %s, which is not declared: pass its handle to graph.New", w.field().goName())
		}
		w.apply(&r.state)
		r.touched(w.field())
	}
	for _, w := range u.writes {
		w.field().afterMerge(&r.state)
	}
	fork, err := r.isFork(cp.ID)
	if err != nil {
		return err
	}
	r.source = SourceUpdate
	if fork {
		r.source = SourceFork
	}
	if fork {
		// A branch from an older checkpoint runs its pending step again in
		// full, as new tasks.
		for i, t := range r.tasks {
			r.tasks[i] = task[S]{node: t.node, arg: t.arg}
		}
	}
	kept := r.tasks
	if from != nil {
		// The update stands for from's output: from's unfinished tasks are
		// done with, and what was pending only because of the routing
		// before it is routed again from from. Finished tasks and tasks
		// that asked something stay.
		kept = slices.DeleteFunc(slices.Clone(kept), func(t task[S]) bool {
			asked := t.hold != nil && len(t.hold.pause) > 0
			return !t.done && (t.node == from || !asked)
		})
	}
	r.next = r.next[:0]
	if from != nil {
		err = r.plan(from, &task[S]{node: from, upd: u})
		r.planJoins()
		r.ran = []string{asNode}
	} else {
		for _, name := range u.gotos {
			if err = r.goTo("update", name, nil); err != nil {
				break
			}
		}
		for _, snd := range u.sends {
			if err == nil {
				err = r.send("update", snd, nil)
			}
		}
	}
	if err != nil {
		return err
	}
	if len(kept) == 0 {
		r.releaseDeferred()
	}
	for _, t := range r.next {
		pending := t.node.payload == nil && slices.ContainsFunc(kept, func(k task[S]) bool { return k.node == t.node && !k.done })
		if !pending {
			kept = append(kept, t)
		}
	}
	r.tasks, r.carry = kept, !fork
	return nil
}

// records are the task records the run's tasks carry into a new
// checkpoint: updates of finished tasks, interrupts and answers, errors,
// released breakpoints.
func (r *run[S]) records() ([]TaskWrite, error) {
	var out []TaskWrite
	now := time.Now()
	for i := range r.tasks {
		t := &r.tasks[i]
		if !t.done && t.hold == nil {
			continue
		}
		w := TaskWrite{Task: i, Node: t.node.name, Err: t.failed, Subgraphs: t.subgraphs, Time: now, Cached: t.cached}
		if t.hold != nil {
			w.Interrupts, w.Answers = t.hold.pause, t.hold.answers
		}
		if t.done {
			data, err := json.Marshal(t.upd)
			if err != nil {
				return nil, fmt.Errorf("graph: the update of task %d (%s) cannot be stored again: %w", i, t.node.name, err)
			}
			w.Update = data
		}
		out = append(out, w)
	}
	return out, nil
}

// resumeUpdate applies WithUpdate's update to the loaded run.
func (r *run[S]) resumeUpdate(cp *Checkpoint) error {
	pu, ok := r.update.(*pendingUpdate[S])
	if !ok {
		return fmt.Errorf("graph: graph.WithUpdate got an update of another state type (%T), but this graph's state is %s", r.update, reflect.TypeFor[S]())
	}
	return r.edit(cp, pu.u, pu.asNode)
}
