package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/graph"
)

// saveState is the first write to a store that failed while a run went on
// (Store.GoOnWithoutSaving).
type saveState struct {
	mu     sync.Mutex
	err    error
	logger *slog.Logger
	where  string
}

// fail records err, the failure of a write to the store, as the end of
// saving; it warns once.
func (s *saveState) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if se := classifyStoreErr(s.where, storeFile(s.where), err); se != nil {
		s.err = se
	} else {
		s.err = fmt.Errorf("the run store %s failed: %w", s.where, err)
	}
	s.logger.Warn(fmt.Sprintf("the run store %s failed while saving the run: it goes on without saving and cannot be resumed from where it ends", s.where), "err", err)
}

func (s *saveState) failed() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// storeFile is the file of a store printed as where, "" for PostgreSQL.
func storeFile(where string) string {
	if config.IsPostgres(where) {
		return ""
	}
	return where
}

// GoOnWithoutSaving makes a run that this process drives outlive a failure
// of the store: when a write of its checkpoints fails — a full disk, a
// store that went read-only or away — the failure is logged once as a
// warning, the run goes on without writing to the store any more (its
// checkpoints stop at the last one saved, so the store stays consistent),
// and SaveFailure reports it, for the caller to print the report and say
// that the run was not kept. A conflict with another writer of the thread
// still fails the run. Call it before handing Checkpointer to the run; it
// is for a process that drives one run (the CLI), not for a server.
func (s *Store) GoOnWithoutSaving(logger *slog.Logger) {
	if s == nil || s.save != nil {
		return
	}
	s.save = &saveState{logger: orDiscard(logger), where: s.Where}
	s.Checkpointer = &guardedCheckpointer{Checkpointer: s.Checkpointer, save: s.save}
}

// SaveFailure is the first failure to save a run that went on without
// saving (GoOnWithoutSaving): a *StoreError when the store's disk is full
// or it is read-only. Nil when every write succeeded.
func (s *Store) SaveFailure() error {
	if s == nil {
		return nil
	}
	return s.save.failed()
}

// guardedCheckpointer is a Checkpointer whose writes, after one failed,
// are dropped (GoOnWithoutSaving).
type guardedCheckpointer struct {
	graph.Checkpointer
	save *saveState
}

// tolerable reports whether err, from a write, is the store failing rather
// than the run: a conflict with another writer, a lease lost, a document
// too large or a cancelled call are the run's.
func tolerable(ctx context.Context, err error) bool {
	switch {
	case err == nil, ctx.Err() != nil,
		errors.Is(err, graph.ErrCheckpointConflict), errors.Is(err, graph.ErrThreadBusy),
		errors.Is(err, graph.ErrCheckpointTooLarge), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return true
}

func (g *guardedCheckpointer) write(ctx context.Context, fn func() error) error {
	if g.save.failed() != nil {
		return nil
	}
	err := fn()
	if tolerable(ctx, err) {
		g.save.fail(err)
		return nil
	}
	return err
}

func (g *guardedCheckpointer) Put(ctx context.Context, cp *graph.Checkpoint) error {
	return g.write(ctx, func() error { return g.Checkpointer.Put(ctx, cp) })
}

func (g *guardedCheckpointer) PutWrites(ctx context.Context, at graph.Ref, run string, writes ...graph.TaskWrite) error {
	return g.write(ctx, func() error { return g.Checkpointer.PutWrites(ctx, at, run, writes...) })
}

// TakeThread renews the run's lease; once saving stopped, the lease is the
// run's own without asking the store.
func (g *guardedCheckpointer) TakeThread(ctx context.Context, thread, run string, ttl time.Duration) (graph.Lease, error) {
	if g.save.failed() != nil {
		return graph.Lease{Thread: thread, Run: run, Until: time.Now().Add(ttl)}, nil
	}
	return g.Checkpointer.TakeThread(ctx, thread, run, ttl)
}

func (g *guardedCheckpointer) ReleaseThread(ctx context.Context, thread, run string) error {
	if g.save.failed() != nil {
		return nil
	}
	return g.Checkpointer.ReleaseThread(ctx, thread, run)
}
