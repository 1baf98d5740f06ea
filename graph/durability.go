package graph

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// DurabilityMode says when a run writes its progress to the checkpointer
// (LangGraph's durability). It decides when Put and PutWrites happen, not
// what they store: every mode leaves a thread that Resume, State and
// History read the same way.
type DurabilityMode uint8

// The durability modes.
const (
	// DurabilitySync, the default, writes each step's checkpoint before
	// the next step starts, and each task's outcome as the task finishes.
	// A crash loses only the tasks that were running.
	DurabilitySync DurabilityMode = iota
	// DurabilityAsync writes each step's checkpoint, and the outcomes of
	// the next step's tasks, in the background while the next step runs;
	// the writes are done, in order, before the next checkpoint is written
	// and before the run returns (done, paused or failed). A crash loses
	// at most the step that was running and the one before it; a write
	// that fails stops the run at the next step's end.
	DurabilityAsync
	// DurabilityExit writes only when the run returns: finished, paused at
	// an interrupt or a breakpoint, failed or cancelled. It stores the
	// run's last checkpoint — whose Parent is the last checkpoint stored
	// before the run — with the outcomes of its pending step's tasks, so a
	// Resume goes on as after a sync run; the checkpoints of the steps in
	// between are never stored (History does not show them) — but for
	// those of a same-state subgraph (AddSubgraph), which are all stored
	// when it returns, since its parent merges the writes of each of its
	// steps. A crash loses everything the run did.
	DurabilityExit
)

func (m DurabilityMode) String() string {
	switch m {
	case DurabilitySync:
		return "sync"
	case DurabilityAsync:
		return "async"
	case DurabilityExit:
		return "exit"
	}
	return fmt.Sprintf("DurabilityMode(%d)", uint8(m))
}

// WithDurability sets the graph's default durability mode
// (DurabilitySync unless set).
func WithDurability(m DurabilityMode) Option { return func(s *settings) { s.durability = m } }

// Durability sets one run's durability mode, in place of the graph's
// (WithDurability). A subgraph's run has its parent's.
func Durability(m DurabilityMode) RunOption {
	return runFunc(func(r *runSettings) { r.durability, r.setDurability = m, true })
}

// saver is where a run that does not write synchronously keeps its
// checkpointer writes until they are made.
type saver struct {
	mode DurabilityMode
	cp   Checkpointer
	run  string // the run ID the writes are made as

	// exit: the newest checkpoint, not yet stored — or, with line, every
	// checkpoint of the run, in order — and the checkpoint stored last
	// (the parent of the first one stored at the end); the task records
	// for a stored checkpoint.
	held       []*Checkpoint
	line       bool
	stored     Ref
	heldWrites []TaskWrite // for stored, when no checkpoint is held
	mu         sync.Mutex  // guards held.Writes and heldWrites (tasks record in parallel)

	// async: writes in order, made by one goroutine at a time.
	queue   []saveOp
	busy    bool
	idle    *sync.Cond // signalled when the queue empties
	err     error      // the first failed write
	writing context.Context
}

type saveOp struct {
	cp     *Checkpoint // a Put, or, when nil, a PutWrites at at
	at     Ref
	writes []TaskWrite
}

func newSaver(ctx context.Context, mode DurabilityMode, cp Checkpointer, run string) *saver {
	s := &saver{mode: mode, cp: cp, run: run, writing: context.WithoutCancel(ctx)}
	s.idle = sync.NewCond(&s.mu)
	return s
}

// put stores cp by the run's durability.
func (r *run[S]) put(cp *Checkpoint) error {
	s := r.save
	if s == nil {
		return r.cp.Put(r.ctx, cp)
	}
	switch s.mode {
	case DurabilityAsync:
		// Write behind one step: the previous step's writes are done
		// before this checkpoint is queued, which bounds what waits in
		// memory to one step.
		if err := s.wait(); err != nil {
			return err
		}
		s.enqueue(saveOp{cp: cp})
		return nil
	default: // DurabilityExit
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.line {
			s.held = append(s.held, cp)
			return nil
		}
		if len(s.held) > 0 {
			// The held checkpoint is never stored: the new one follows
			// the last stored checkpoint, and keeps a fork's license to
			// follow one that is not the newest.
			cp.Parent = s.held[0].Parent
			if s.held[0].Source == SourceFork {
				cp.Source = SourceFork
			}
			// Channel versions it introduced and cp still names are
			// stored with cp.
			for _, cv := range s.held[0].Values {
				if cp.Versions[cv.Channel] == cv.Version {
					cp.Values = append(cp.Values, cv)
				}
			}
		}
		s.held, s.heldWrites = append(s.held[:0], cp), nil
		return nil
	}
}

// putWrites stores task records of the step after checkpoint at by the
// run's durability.
func (r *run[S]) putWrites(at Ref, writes ...TaskWrite) error {
	s := r.save
	if s == nil {
		return r.cp.PutWrites(r.ctx, at, r.runID, writes...)
	}
	if s.mode == DurabilityAsync {
		s.mu.Lock()
		err := s.err
		s.mu.Unlock()
		if err != nil {
			return err
		}
		s.enqueue(saveOp{at: at, writes: writes})
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := len(s.held) - 1; i >= 0 && s.held[i].ID == at.Checkpoint {
		s.held[i].Writes = replaceRecords(s.held[i].Writes, writes)
	} else {
		s.stored = at
		s.heldWrites = replaceRecords(s.heldWrites, writes)
	}
	return nil
}

// replaceRecords adds writes to have, a later record of a task replacing
// the earlier one.
func replaceRecords(have, writes []TaskWrite) []TaskWrite {
	for _, w := range writes {
		replaced := false
		for i := range have {
			if have[i].Task == w.Task {
				have[i], replaced = w, true
			}
		}
		if !replaced {
			have = append(have, w)
		}
	}
	return have
}

func (s *saver) enqueue(op saveOp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, op)
	if !s.busy {
		s.busy = true
		go s.drain()
	}
}

// drain makes the queued writes in order until the queue is empty; after a
// failure it drops the rest (they depend on the failed one).
func (s *saver) drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) > 0 {
		op := s.queue[0]
		s.queue[0] = saveOp{}
		s.queue = s.queue[1:]
		if s.err != nil {
			continue
		}
		s.mu.Unlock()
		var err error
		if op.cp != nil {
			err = s.cp.Put(s.writing, op.cp)
			if err != nil {
				err = fmt.Errorf("graph: saving checkpoint of thread %q after step %d: %w", op.cp.Thread, op.cp.Step, err)
			}
		} else {
			err = s.cp.PutWrites(s.writing, op.at, s.run, op.writes...)
			if err != nil {
				err = fmt.Errorf("graph: saving task outcomes of thread %s: %w", op.at, err)
			}
		}
		s.mu.Lock()
		if err != nil && s.err == nil {
			s.err = err
		}
	}
	s.queue = nil
	s.busy = false
	s.idle.Broadcast()
}

// wait returns when the queued writes are made, with the first error.
func (s *saver) wait() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.busy {
		s.idle.Wait()
	}
	return s.err
}

// flush makes the run's pending writes — all of them, whatever the run's
// outcome — and combines a failure to make them with the run's error.
func (r *run[S]) flush(runErr error) error {
	s := r.save
	if s == nil {
		return runErr
	}
	var err error
	switch s.mode {
	case DurabilityAsync:
		err = s.wait()
	case DurabilityExit:
		s.mu.Lock()
		held, writes, stored := s.held, s.heldWrites, s.stored
		s.held, s.heldWrites = nil, nil
		s.mu.Unlock()
		if len(writes) > 0 {
			if err = s.cp.PutWrites(s.writing, stored, s.run, writes...); err != nil {
				err = fmt.Errorf("graph: saving task outcomes of thread %s: %w", stored, err)
			}
		}
		for _, cp := range held {
			if err != nil {
				break
			}
			if err = s.cp.Put(s.writing, cp); err != nil {
				err = fmt.Errorf("graph: saving checkpoint of thread %q after step %d: %w", cp.Thread, cp.Step, err)
			}
		}
	}
	switch {
	case err == nil:
		return runErr
	case runErr == nil || errors.Is(runErr, ErrInterrupted):
		// A pause that was not stored is no pause: report the failure.
		return err
	default:
		return errors.Join(runErr, err)
	}
}
