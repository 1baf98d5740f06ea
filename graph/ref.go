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
	// Checkpoint is a checkpoint's ID; "" means the thread's newest.
	Checkpoint string
}

// Thread names a thread (see Ref).
func Thread(id string) Ref { return Ref{Thread: id} }

// At returns the reference to checkpoint id of the same thread.
func (r Ref) At(id string) Ref {
	r.Checkpoint = id
	return r
}

func (r Ref) applyRun(s *runSettings) { s.thread, s.from = r.Thread, r.Checkpoint }

// String is "thread" or "thread@checkpoint", quoted as Go would.
func (r Ref) String() string {
	s := strconv.Quote(r.Thread)
	if r.Checkpoint != "" {
		s += "@" + r.Checkpoint
	}
	return s
}
