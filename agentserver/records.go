package agentserver

import (
	"context"
	"reflect"
)

// The writes of the records of threads and runs to the Store. Each
// thread's records — its own and its runs' — are written in the order
// they were asked for, one at a time, by a queue of its own; the queues of
// different threads write at once. No lock is held while a record is
// written: a request that asks for a write while its thread's queue is
// writing adds the write to the queue and goes on — the queue's writer
// makes it next — so that a submission never waits for the store's writes
// of another, also on its own thread. A write waiting in the queue is not
// added twice: a record is read when it is written, so one write writes
// the newest.

// recordQueue is the queue of one thread's writes: it is in Server.queues
// while a writer (the goroutine that found no queue) makes its writes.
// Under Server.wmu.
type recordQueue struct {
	waiting []*recordWrite
	// drained is closed when the writer has made every write and gone.
	drained chan struct{}
}

// recordWrite is a write of a queue: a run's record, else its thread's
// (thread), else a deletion (del).
type recordWrite struct {
	run    *run
	thread *thread
	del    func() error
	// err is del's error; done is closed once the write is made.
	err  error
	done chan struct{}
}

// queue adds w to the queue of thread id — or finds the same write waiting
// there — and returns it. When there was no queue, the caller is the
// writer: queue returns once it has made every write of it.
func (s *Server) queue(id string, w *recordWrite) *recordWrite {
	s.wmu.Lock()
	q := s.queues[id]
	if q != nil {
		if w.del == nil {
			for _, o := range q.waiting {
				if o.del == nil && o.run == w.run && o.thread == w.thread {
					s.wmu.Unlock()
					return o
				}
			}
		}
		w.done = make(chan struct{})
		q.waiting = append(q.waiting, w)
		s.wmu.Unlock()
		return w
	}
	w.done = make(chan struct{})
	q = &recordQueue{waiting: []*recordWrite{w}, drained: make(chan struct{})}
	s.queues[id] = q
	for len(q.waiting) > 0 {
		next := q.waiting[0]
		q.waiting = q.waiting[1:]
		s.wmu.Unlock()
		switch {
		case next.del != nil:
			next.err = next.del()
		case next.run != nil:
			s.putRun(next.run)
		default:
			s.putThread(next.thread)
		}
		close(next.done)
		s.wmu.Lock()
	}
	delete(s.queues, id)
	close(q.drained)
	s.wmu.Unlock()
	return w
}

// saveThread writes a thread's record (not a stateless one's, nor one
// deleted meanwhile) without waiting for its queue; a failure is logged:
// the server goes on from memory.
func (s *Server) saveThread(t *thread) {
	if t.stateless { // set at its creation, never changed
		return
	}
	s.queue(t.id, &recordWrite{thread: t})
}

// saveRun writes a run's record after its thread's (none for a stateless
// run). With wait it returns once they are written; else it may return
// while its thread's queue writes them.
func (s *Server) saveRun(ru *run, wait bool) {
	t := ru.thread
	if t.stateless {
		return
	}
	s.queue(t.id, &recordWrite{thread: t})
	w := s.queue(t.id, &recordWrite{run: ru})
	if wait {
		<-w.done
	}
}

// unstore removes records of thread threadID from the store, in the
// order of its queue: del is its DeleteThread or DeleteRun, called (with
// id) after the thread or run left the server's maps.
func (s *Server) unstore(ctx context.Context, threadID string, del func(context.Context, string) error, id string) error {
	w := s.queue(threadID, &recordWrite{del: func() error { return del(ctx, id) }})
	<-w.done
	return w.err
}

// putThread writes a thread's record as it is now, by its queue's writer:
// not when it left the server's maps or is as last written.
func (s *Server) putThread(t *thread) {
	s.mu.Lock()
	kept := s.threads[t.id] == t
	rec := ThreadRecord{ID: t.id, CreatedAt: t.created, UpdatedAt: t.updated, StateUpdatedAt: t.stateUpdated,
		Metadata: cloneMetadata(t.metadata), GraphID: t.graphID, Status: t.status}
	s.mu.Unlock()
	if !kept || (t.saved != nil && reflect.DeepEqual(*t.saved, rec)) {
		return // a run's start changes its record, not its thread's
	}
	if err := s.store.PutThread(context.Background(), rec); err != nil {
		t.saved = nil
		s.log.Warn("could not keep a thread's record", "thread", t.id, "err", err)
		return
	}
	t.saved = &rec
}

// putRun writes a run's record as it is now, by its queue's writer: not
// when it left the server's maps.
func (s *Server) putRun(ru *run) {
	s.mu.Lock()
	kept := s.runs[ru.id] == ru
	s.mu.Unlock()
	if !kept {
		return
	}
	if err := s.store.PutRun(context.Background(), s.runOf(ru)); err != nil {
		s.log.Warn("could not keep a run's record", "run", ru.id, "err", err)
	}
}

// writesDone waits until every queue has made its writes (or ctx ends).
func (s *Server) writesDone(ctx context.Context) error {
	for {
		s.wmu.Lock()
		var drained chan struct{}
		for _, q := range s.queues {
			drained = q.drained
			break
		}
		s.wmu.Unlock()
		if drained == nil {
			return nil
		}
		select {
		case <-drained:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
