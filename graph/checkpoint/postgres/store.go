package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/internal/storecodec"
)

// Put implements graph.Checkpointer: in one transaction it locks the
// thread's row, checks cp.Parent against the thread's newest checkpoint,
// stores cp and makes it the newest.
func (s *Saver) Put(ctx context.Context, cp *graph.Checkpoint) error {
	if err := storecodec.Validate(cp); err != nil {
		return err
	}
	data, err := storecodec.EncodeCheckpoint(cp)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	fork := cp.Source == graph.SourceFork && cp.Parent != ""
	var newest string
	var parentExists bool
	// One round trip begins the transaction, creates the thread's row if it
	// is new and locks it; a writer of the same thread waits here until this
	// transaction ends, then reads what it left.
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue(s.sql.createThread, cp.Thread)
	b.Queue(s.sql.lockThread, cp.Thread).QueryRow(func(r pgx.Row) error { return r.Scan(&newest) })
	if fork {
		b.Queue(s.sql.parentExists, cp.Thread, cp.Parent).QueryRow(func(r pgx.Row) error { return r.Scan(&parentExists) })
	}
	br := s.pool.SendBatch(ctx, b)
	tx := br.Tx()
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
	if err := br.Close(); err != nil {
		return storing(cp, err)
	}
	if err := storecodec.Check(cp, newest, parentExists); err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, s.sql.insert, cp.Thread, cp.ID, cp.Parent, cp.Step, cp.Created, string(cp.Source), data)
	if err != nil {
		return storing(cp, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: thread %q already has a checkpoint %s: a checkpoint id is stored once per thread", cp.Thread, cp.ID)
	}
	if err := tx.Commit(ctx); err != nil {
		return storing(cp, err)
	}
	return nil
}

func storing(cp *graph.Checkpoint, err error) error {
	return fmt.Errorf("postgres: storing checkpoint %s of thread %q: %w", cp.ID, cp.Thread, err)
}

// PutWrites implements graph.Checkpointer, storing the records of one call
// in one statement. Of several records of one task in a call, the last is
// kept.
func (s *Saver) PutWrites(ctx context.Context, thread, id string, writes ...graph.TaskWrite) error {
	if len(writes) == 0 {
		return nil
	}
	// In task order, so that concurrent calls lock rows in the same order.
	ws := slices.Clone(writes)
	slices.SortStableFunc(ws, func(a, b graph.TaskWrite) int { return cmp.Compare(a.Task, b.Task) })
	tasks := make([]int, 0, len(ws))
	docs := make([][]byte, 0, len(ws))
	for i, w := range ws {
		if i+1 < len(ws) && ws[i+1].Task == w.Task {
			continue // a later record of the task replaces this one
		}
		data, err := storecodec.EncodeWrite(w)
		if err != nil {
			return fmt.Errorf("postgres: checkpoint %s of thread %q: %w", id, thread, err)
		}
		tasks = append(tasks, w.Task)
		docs = append(docs, data)
	}
	if _, err := s.pool.Exec(ctx, s.sql.putWrites, thread, id, tasks, docs); err != nil {
		return fmt.Errorf("postgres: storing task records of checkpoint %s of thread %q: %w", id, thread, err)
	}
	return nil
}

// Get implements graph.Checkpointer, in one query.
func (s *Saver) Get(ctx context.Context, thread, id string) (*graph.Checkpoint, error) {
	rows, _ := s.pool.Query(ctx, s.sql.get, thread, id, s.maxBytes)
	var cp *graph.Checkpoint
	var task, size int
	var cpID string
	var data []byte
	_, err := pgx.ForEachRow(rows, []any{&task, &cpID, &size, &data}, func() error {
		if task < 0 {
			c, err := s.decodeCheckpoint(thread, cpID, size, data)
			cp = c
			return err
		}
		w, err := s.decodeWrite(thread, cpID, task, size, data)
		cp.Writes = append(cp.Writes, w)
		return err
	})
	switch {
	case err != nil:
		return nil, reading(thread, err)
	case cp == nil:
		return nil, graph.ErrCheckpointNotFound
	}
	return cp, nil
}

// List implements graph.Checkpointer.
func (s *Saver) List(ctx context.Context, thread string, limit int) ([]*graph.Checkpoint, error) {
	var most any // NULL: no limit
	if limit > 0 {
		most = limit
	}
	rows, _ := s.pool.Query(ctx, s.sql.list, thread, most, s.maxBytes)
	var out []*graph.Checkpoint
	var size int
	var id string
	var data []byte
	_, err := pgx.ForEachRow(rows, []any{&id, &size, &data}, func() error {
		cp, err := s.decodeCheckpoint(thread, id, size, data)
		out = append(out, cp)
		return err
	})
	if err != nil {
		return nil, reading(thread, err)
	}
	return out, nil
}

// DeleteThread implements graph.Checkpointer, in one statement.
func (s *Saver) DeleteThread(ctx context.Context, thread string) error {
	if _, err := s.pool.Exec(ctx, s.sql.deleteThread, thread); err != nil {
		return fmt.Errorf("postgres: deleting thread %q: %w", thread, err)
	}
	return nil
}

func reading(thread string, err error) error {
	if errors.Is(err, storecodec.ErrCorrupt) {
		return fmt.Errorf("postgres: reading thread %q: %w; the row was changed outside deepgraph: restore it from a backup, or delete the thread", thread, err)
	}
	return fmt.Errorf("postgres: reading thread %q: %w", thread, err)
}

func (s *Saver) decodeCheckpoint(thread, id string, size int, data []byte) (*graph.Checkpoint, error) {
	if err := s.checkSize(size); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	cp, err := storecodec.DecodeCheckpoint(data, s.maxBytes)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	if cp.Thread != thread || cp.ID != id {
		return nil, fmt.Errorf("checkpoint %s: %w: its row holds checkpoint %s of thread %q", id, storecodec.ErrCorrupt, cp.ID, cp.Thread)
	}
	return cp, nil
}

func (s *Saver) decodeWrite(thread, id string, task, size int, data []byte) (graph.TaskWrite, error) {
	if err := s.checkSize(size); err != nil {
		return graph.TaskWrite{}, fmt.Errorf("the record of task %d of checkpoint %s: %w", task, id, err)
	}
	w, err := storecodec.DecodeWrite(data, s.maxBytes)
	if err != nil {
		return w, fmt.Errorf("the record of task %d of checkpoint %s: %w", task, id, err)
	}
	if w.Task != task {
		return w, fmt.Errorf("the record of task %d of checkpoint %s: %w: its row holds task %d", task, id, storecodec.ErrCorrupt, w.Task)
	}
	return w, nil
}

// checkSize refuses a document the query left out for its size.
func (s *Saver) checkSize(size int) error {
	if size > s.maxBytes {
		return fmt.Errorf("%w: the stored document is %d bytes, over the limit of %d (raise it with postgres.WithMaxBytes)", graph.ErrCheckpointTooLarge, size, s.maxBytes)
	}
	return nil
}
