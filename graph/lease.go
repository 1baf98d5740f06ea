package graph

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultLease is how long a run's hold on its thread lasts unless
// renewed, unless WithLease says otherwise. A run renews it every third of
// that while it runs; a run killed with its process holds its thread until
// the lease expires.
const DefaultLease = 15 * time.Second

// WithLease sets how long a run's hold on its thread lasts unless renewed
// (DefaultLease). A shorter lease frees the thread of a crashed run sooner,
// and makes a stop request (BusyInterrupt) from another process heard
// sooner, at the cost of a renewal — one small write — every third of it.
// Within one process a stop request and a thread's release are heard at
// once, whatever the lease.
func WithLease(d time.Duration) Option { return func(s *settings) { s.lease = d } }

// BusyStrategy is what a run does when another run holds its thread
// (LangGraph's multitask strategies).
type BusyStrategy uint8

// The strategies.
const (
	// BusyReject, the default: the run fails at once with a
	// *ThreadBusyError (errors.Is ErrThreadBusy), having written nothing.
	BusyReject BusyStrategy = iota
	// BusyEnqueue: the run waits for the other run to end, then goes.
	BusyEnqueue
	// BusyInterrupt: the run asks the other run to stop — it ends with
	// ErrRunStopped, its progress stored — waits for it, then goes.
	BusyInterrupt
	// BusyRollback: as BusyInterrupt, and the checkpoints the stopped run
	// wrote are deleted before this run starts.
	BusyRollback
)

func (s BusyStrategy) String() string {
	switch s {
	case BusyReject:
		return "reject"
	case BusyEnqueue:
		return "enqueue"
	case BusyInterrupt:
		return "interrupt"
	case BusyRollback:
		return "rollback"
	}
	return fmt.Sprintf("BusyStrategy(%d)", uint8(s))
}

// OnBusy sets what the run does when another run holds its thread (see
// BusyStrategy). Waiting ends with the run's context.
func OnBusy(s BusyStrategy) RunOption { return runFunc(func(r *runSettings) { r.onBusy = s }) }

// ErrRunStopped: the run was stopped because another run took its thread
// (BusyInterrupt, BusyRollback, DeleteThread), or because its lease expired
// and another run took the thread over. What it stored before is kept.
var ErrRunStopped = errors.New("graph: run stopped: another run took its thread")

// keeper is a run's hold on its thread: the lease, renewed in the
// background until the run ends.
type keeper struct {
	cp     Checkpointer
	thread string
	run    string
	ctx    context.Context // the run's context before the keeper's
	stop   chan struct{}
	done   chan struct{}
	cancel context.CancelCauseFunc
	// asked is closed when a run of this process asks for the thread
	// (threadSignals); watched since before the thread was taken, so that
	// no request is missed, and until the keeper ends.
	asked   <-chan struct{}
	unwatch func()
}

// take gives the run its thread before it reads or writes anything of it,
// by the run's BusyStrategy, and keeps it until release. A subgraph's run
// writes under its parent's hold.
func (r *run[S]) take() error {
	if r.cp == nil || r.nested {
		return nil
	}
	k, err := takeThread(r.ctx, r.cp, r.thread, r.runID, r.c.set.lease, r.onBusy)
	if err != nil {
		return err
	}
	r.ctx, r.keeper = k.hold(r.ctx, r.c.set.lease), k
	return nil
}

// release ends the run's hold on its thread.
func (r *run[S]) release() {
	if r.keeper != nil {
		r.keeper.release()
		r.keeper = nil
	}
}

// takeThread takes thread for run, waiting for it by onBusy.
func takeThread(ctx context.Context, cp Checkpointer, thread, run string, ttl time.Duration, onBusy BusyStrategy) (*keeper, error) {
	stopped := map[string]bool{}
	wait := 10 * time.Millisecond
	var k *keeper
	for {
		// Watched before trying, so that a release between the try and
		// the wait is not missed.
		changed, unwatch := threadSignals.watch(thread)
		_, err := cp.TakeThread(ctx, thread, run, ttl)
		if err == nil {
			k = &keeper{cp: cp, thread: thread, run: run, ctx: ctx, asked: changed, unwatch: unwatch}
			break
		}
		var busy *ThreadBusyError
		if !errors.As(err, &busy) {
			unwatch()
			return nil, fmt.Errorf("graph: taking thread %q: %w", thread, err)
		}
		if onBusy == BusyReject {
			unwatch()
			return nil, err
		}
		if (onBusy == BusyInterrupt || onBusy == BusyRollback) && !stopped[busy.Run] {
			if _, err := cp.StopThread(ctx, thread); err != nil {
				unwatch()
				return nil, fmt.Errorf("graph: asking run %s to leave thread %q: %w", busy.Run, thread, err)
			}
			stopped[busy.Run] = true
			threadSignals.notify(thread) // a holder in this process hears it now
		}
		// A holder in another process is heard by polling.
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-changed:
			timer.Stop()
		case <-ctx.Done():
			timer.Stop()
			unwatch()
			return nil, fmt.Errorf("graph: waiting for thread %q, which run %s holds (%s): %w", thread, busy.Run, onBusy, context.Cause(ctx))
		}
		unwatch()
		wait = min(2*wait, time.Second)
	}
	if onBusy == BusyRollback {
		for other := range stopped {
			if _, err := cp.Prune(ctx, thread, Prune{Run: other}); err != nil {
				k.release()
				return nil, fmt.Errorf("graph: rolling back run %s of thread %q: %w", other, thread, err)
			}
		}
	}
	return k, nil
}

// hold renews the lease every third of ttl until release, and returns the
// context the run goes on under: cancelled, with ErrRunStopped, when
// someone asks the run to stop or another run took the thread over.
func (k *keeper) hold(ctx context.Context, ttl time.Duration) context.Context {
	ctx, k.cancel = context.WithCancelCause(ctx)
	k.stop, k.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(k.done)
		defer func() { k.unwatch() }()
		tick := time.NewTicker(max(ttl/3, time.Millisecond))
		defer tick.Stop()
		for {
			// A stop request of this process wakes the keeper at once;
			// one of another process is read at the next renewal.
			select {
			case <-k.stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-k.asked:
			}
			// Watched again before the store is read: a request made
			// after the read wakes the next wait.
			k.unwatch()
			k.asked, k.unwatch = threadSignals.watch(k.thread)
			l, err := k.cp.TakeThread(ctx, k.thread, k.run, ttl)
			var busy *ThreadBusyError
			switch {
			case errors.As(err, &busy):
				k.cancel(fmt.Errorf("%w: run %s took thread %q over after this run's lease expired", ErrRunStopped, busy.Run, k.thread))
				return
			case err == nil && l.Stop:
				k.cancel(fmt.Errorf("%w: another run or a deletion asked for thread %q", ErrRunStopped, k.thread))
				return
			}
			// Another failure: try again at the next tick; if the lease
			// expires meanwhile, the store refuses this run's writes.
		}
	}()
	return ctx
}

// release stops the renewals and gives the thread back.
func (k *keeper) release() {
	if k.stop != nil {
		close(k.stop)
		<-k.done // its end stopped watching
		k.cancel(nil)
	} else {
		k.unwatch()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(k.ctx), 10*time.Second)
	defer cancel()
	// A failure leaves the lease to expire.
	_ = k.cp.ReleaseThread(ctx, k.thread, k.run)
	threadSignals.notify(k.thread) // a run of this process waiting for it goes now
}

// threadSignals tells the runs of this process at once when a thread they
// hold or wait for changes hands (a stop request, a release): the store is
// only polled for what other processes do. A signal for a thread of
// another checkpointer with the same id only makes a keeper or a waiter
// look at its store early.
var threadSignals = signals{m: map[string]*signal{}}

type signals struct {
	mu sync.Mutex
	m  map[string]*signal
}

// signal is closed by the next notify of its thread.
type signal struct {
	ch       chan struct{}
	watchers int
}

// watch returns a channel closed at the thread's next notify, and the
// function to call when done watching it (whether it closed or not).
func (s *signals) watch(thread string) (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sig := s.m[thread]
	if sig == nil {
		sig = &signal{ch: make(chan struct{})}
		s.m[thread] = sig
	}
	sig.watchers++
	return sig.ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if sig.watchers--; sig.watchers == 0 && s.m[thread] == sig {
			delete(s.m, thread)
		}
	}
}

// notify wakes the thread's watchers.
func (s *signals) notify(thread string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sig := s.m[thread]; sig != nil {
		close(sig.ch)
		delete(s.m, thread)
	}
}

// DeleteThread deletes a thread from cp with its checkpoints in every
// namespace, its task records and its values. A run holding the thread
// makes it fail with a *ThreadBusyError, unless onBusy says to wait for the
// run to end (BusyEnqueue) or to stop it first (BusyInterrupt,
// BusyRollback); the run then ends with ErrRunStopped, and nothing it does
// after is stored.
func DeleteThread(ctx context.Context, cp Checkpointer, thread string, onBusy BusyStrategy) error {
	k, err := takeThread(ctx, cp, thread, newID(), DefaultLease, onBusy)
	if err != nil {
		return err
	}
	k.release()
	// Between the release and the deletion another run may take the
	// thread: the store refuses the deletion then, and says so.
	return cp.DeleteThread(ctx, thread)
}
