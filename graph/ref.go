package graph

import "strconv"

// Ref names a thread — the one way to name it, for runs and for reading and
// editing what is stored — and, within it, a checkpoint:
//
//	run.Invoke(ctx, in, graph.Thread("t-1"))                  // continue thread t-1
//	run.Invoke(ctx, in, graph.Thread("t-1").At(checkpointID)) // run from an older checkpoint: a fork
//	run.State(ctx, graph.Thread("t-1"))                       // its newest state
//	run.UpdateState(ctx, graph.Thread("t-1").At(id), upd, graph.AsNode("review"))
//
// As a RunOption it puts the run on the thread: with a Checkpointer the
// run's progress is stored under it, Resume continues it after a failure or
// an interrupt, and Invoke on a thread whose last run finished continues
// from that run's state. With a checkpoint (At), the run starts from that
// checkpoint instead of the thread's newest; when it is not the newest, the
// run starts a branch (SourceFork) and the checkpoints after it stay in
// History.
type Ref struct {
	Thread string
	// Namespace is a subgraph's line of checkpoints in the thread ("" for
	// the graph the run started; see Checkpoint.Namespace). Runs start in
	// "", and State and History read a subgraph's with In.
	Namespace string
	// Checkpoint is a checkpoint's ID; "" means the newest.
	Checkpoint string
}

// Thread names a thread (see Ref).
func Thread(id string) Ref { return Ref{Thread: id} }

// At returns the reference to checkpoint id of the same thread.
func (r Ref) At(id string) Ref {
	r.Checkpoint = id
	return r
}

// In returns the reference to the newest checkpoint of namespace ns of
// the same thread: a subgraph's (see TaskState.Subgraphs).
func (r Ref) In(ns string) Ref {
	r.Namespace, r.Checkpoint = ns, ""
	return r
}

func (r Ref) applyRun(s *runSettings) { s.thread, s.ns, s.from = r.Thread, r.Namespace, r.Checkpoint }

// String is "thread", then "[namespace]" and "@checkpoint" when set, the
// thread quoted as Go would.
func (r Ref) String() string {
	s := strconv.Quote(r.Thread)
	if r.Namespace != "" {
		s += "[" + r.Namespace + "]"
	}
	if r.Checkpoint != "" {
		s += "@" + r.Checkpoint
	}
	return s
}
