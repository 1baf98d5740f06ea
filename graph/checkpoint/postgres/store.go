package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/internal/storecodec"
)

// lease is a thread's lease as its row holds it.
type lease struct {
	run   string
	until time.Time
	live  bool // by the server's clock
}

// busy is the refusal of a write by run while l is held by another.
func (l lease) busy(thread, run string) error {
	if l.live && l.run != "" && l.run != run {
		return &graph.ThreadBusyError{Thread: thread, Run: l.run, Until: l.until}
	}
	return nil
}

// Put implements graph.Checkpointer: in one transaction it locks the
// thread's row, checks the lease and cp.Parent against the newest
// checkpoint of cp's namespace, and stores cp, its new channel values and
// its task records.
func (s *Saver) Put(ctx context.Context, cp *graph.Checkpoint) error {
	if err := storecodec.Validate(cp); err != nil {
		return err
	}
	data, err := storecodec.EncodeCheckpoint(cp)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	channels := make([]string, 0, len(cp.Versions))
	for ch := range cp.Versions {
		channels = append(channels, ch)
	}
	slices.Sort(channels)
	versions := make([]string, len(channels))
	for i, ch := range channels {
		versions[i] = cp.Versions[ch]
	}
	tasks, records, err := encodeWrites(cp.Writes)
	if err != nil {
		return fmt.Errorf("postgres: checkpoint %s of thread %q: %w", cp.ID, cp.Thread, err)
	}
	return s.retry.Do(ctx, Transient, func(ctx context.Context, attempt int) error {
		return s.put(ctx, cp, attempt, data, channels, versions, tasks, records)
	})
}

// put is one attempt of Put. An attempt after the first that finds cp
// stored (the newest checkpoint of its namespace) succeeds: the earlier
// attempt committed, and only its reply was lost.
func (s *Saver) put(ctx context.Context, cp *graph.Checkpoint, attempt int, data []byte, channels, versions []string, tasks []int, records [][]byte) error {
	fork := cp.Source == graph.SourceFork && cp.Parent != ""
	var l lease
	var newest string
	var parentExists bool
	// One round trip begins the transaction, creates the thread's row if it
	// is new and locks it; a writer of the same thread waits here until this
	// transaction ends, then reads what it left.
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue(s.sql.createThread, cp.Thread)
	b.Queue(s.sql.lockThread, cp.Thread).QueryRow(func(r pgx.Row) error { return r.Scan(&l.run, &l.until, &l.live) })
	b.Queue(s.sql.newest, cp.Thread, cp.Namespace).QueryRow(func(r pgx.Row) error { return r.Scan(&newest) })
	if fork {
		b.Queue(s.sql.parentExists, cp.Thread, cp.Namespace, cp.Parent).QueryRow(func(r pgx.Row) error { return r.Scan(&parentExists) })
	}
	br := s.pool.SendBatch(ctx, b)
	tx := br.Tx()
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
	if err := br.Close(); err != nil {
		return storing(cp, err)
	}
	if err := l.busy(cp.Thread, cp.Run); err != nil {
		return err
	}
	if attempt > 0 && newest == cp.ID {
		return nil
	}
	if err := storecodec.Check(cp, newest, parentExists); err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, s.sql.insert, cp.Thread, cp.Namespace, cp.ID, cp.Parent, cp.Step, cp.Created, string(cp.Source), cp.Run, channels, versions, data)
	if err != nil {
		return storing(cp, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: thread %q already has a checkpoint %s: a checkpoint id is stored once per thread", cp.Thread, cp.ID)
	}
	if len(cp.Values) > 0 || len(tasks) > 0 {
		wb := &pgx.Batch{}
		if len(cp.Values) > 0 {
			chs, vs, vals := make([]string, len(cp.Values)), make([]string, len(cp.Values)), make([][]byte, len(cp.Values))
			for i, cv := range cp.Values {
				chs[i], vs[i], vals[i] = cv.Channel, cv.Version, cv.Value
			}
			wb.Queue(s.sql.insertBlobs, cp.Thread, cp.Namespace, chs, vs, vals)
		}
		if len(tasks) > 0 {
			wb.Queue(s.sql.insertWrites, cp.Thread, cp.ID, tasks, records)
		}
		if err := tx.SendBatch(ctx, wb).Close(); err != nil {
			return storing(cp, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return storing(cp, err)
	}
	return nil
}

// inTx runs fn in a transaction, and again in a new one while it fails
// with a transient error. Each of its uses is idempotent: DeleteThread and
// Prune delete what is there (Prune's count is of the last attempt).
func (s *Saver) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return s.retry.Do(ctx, Transient, func(ctx context.Context, _ int) error {
		return pgx.BeginFunc(ctx, s.pool, fn)
	})
}

func storing(cp *graph.Checkpoint, err error) error {
	return fmt.Errorf("postgres: storing checkpoint %s of thread %q: %w", cp.ID, cp.Thread, err)
}

// encodeWrites encodes task records in task order — so that concurrent
// calls lock rows in the same order — keeping the last of several records
// of one task.
func encodeWrites(writes []graph.TaskWrite) ([]int, [][]byte, error) {
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
			return nil, nil, err
		}
		tasks = append(tasks, w.Task)
		docs = append(docs, data)
	}
	return tasks, docs, nil
}

// PutWrites implements graph.Checkpointer, storing the records of one call
// in one statement, when the checkpoint exists and no other run holds the
// thread. Of several records of one task in a call, the last is kept.
func (s *Saver) PutWrites(ctx context.Context, at graph.Ref, run string, writes ...graph.TaskWrite) error {
	if len(writes) == 0 {
		return nil
	}
	tasks, docs, err := encodeWrites(writes)
	if err != nil {
		return fmt.Errorf("postgres: checkpoint %s of thread %q: %w", at.Checkpoint, at.Thread, err)
	}
	// An upsert: running it again stores the same records.
	var tag pgconn.CommandTag
	err = s.retry.Do(ctx, Transient, func(ctx context.Context, _ int) error {
		tag, err = s.pool.Exec(ctx, s.sql.putWrites, at.Thread, at.Checkpoint, tasks, docs, run, at.Namespace)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: storing task records of checkpoint %s of thread %q: %w", at.Checkpoint, at.Thread, err)
	}
	if tag.RowsAffected() > 0 {
		return nil
	}
	var l lease
	var exists bool
	err = s.retry.Do(ctx, Transient, func(ctx context.Context, _ int) error {
		return s.pool.QueryRow(ctx, s.sql.writeCheck, at.Thread, at.Namespace, at.Checkpoint).Scan(&l.run, &l.until, &l.live, &exists)
	})
	if err != nil {
		return fmt.Errorf("postgres: storing task records of checkpoint %s of thread %q: %w", at.Checkpoint, at.Thread, err)
	}
	if err := l.busy(at.Thread, run); err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("%w: postgres: thread %q has no checkpoint %s for these task records (was the thread deleted?)", graph.ErrCheckpointNotFound, at.Thread, at)
	}
	return fmt.Errorf("postgres: the task records of checkpoint %s of thread %q were not stored; try again", at.Checkpoint, at.Thread)
}

// Get implements graph.Checkpointer, in one query.
func (s *Saver) Get(ctx context.Context, at graph.Ref) (*graph.Checkpoint, error) {
	var cp *graph.Checkpoint
	err := s.retry.Do(ctx, Transient, func(ctx context.Context, _ int) error {
		var err error
		cp, err = s.get(ctx, at)
		return err
	})
	return cp, err
}

func (s *Saver) get(ctx context.Context, at graph.Ref) (*graph.Checkpoint, error) {
	q := s.sql.getByID
	if at.Checkpoint == "" {
		q = s.sql.getNewest
	}
	rows, _ := s.pool.Query(ctx, q, at.Thread, at.Namespace, at.Checkpoint, s.maxBytes)
	var cp *graph.Checkpoint
	var task, size int
	var id, channel string
	var data []byte
	_, err := pgx.ForEachRow(rows, []any{&task, &id, &channel, &size, &data}, func() error {
		switch {
		case task == -2:
			c, err := s.decodeCheckpoint(at.Thread, id, size, data)
			cp = c
			return err
		case task == -1:
			if err := s.checkSize(size); err != nil {
				return fmt.Errorf("checkpoint %s: channel %q: %w", cp.ID, channel, err)
			}
			cp.Values = append(cp.Values, graph.ChannelValue{Channel: channel, Version: id, Value: data})
			return nil
		}
		w, err := s.decodeWrite(id, task, size, data)
		cp.Writes = append(cp.Writes, w)
		return err
	})
	switch {
	case err != nil:
		return nil, reading(at.Thread, err)
	case cp == nil, cp.Namespace != at.Namespace:
		return nil, graph.ErrCheckpointNotFound
	}
	if err := complete(cp); err != nil {
		return nil, reading(at.Thread, err)
	}
	return cp, nil
}

// complete checks that cp came with a value for every channel it names,
// in channel order.
func complete(cp *graph.Checkpoint) error {
	slices.SortFunc(cp.Values, func(a, b graph.ChannelValue) int { return cmp.Compare(a.Channel, b.Channel) })
	if len(cp.Values) == len(cp.Versions) {
		return nil
	}
	for ch, v := range cp.Versions {
		if !slices.ContainsFunc(cp.Values, func(cv graph.ChannelValue) bool { return cv.Channel == ch }) {
			return fmt.Errorf("%w: checkpoint %s refers to version %s of channel %q, which is not stored", storecodec.ErrCorrupt, cp.ID, v, ch)
		}
	}
	return nil
}

// List implements graph.Checkpointer, in three queries.
func (s *Saver) List(ctx context.Context, at graph.Ref, limit int) ([]*graph.Checkpoint, error) {
	var out []*graph.Checkpoint
	err := s.retry.Do(ctx, Transient, func(ctx context.Context, _ int) error {
		var err error
		out, err = s.list(ctx, at, limit)
		return err
	})
	return out, err
}

func (s *Saver) list(ctx context.Context, at graph.Ref, limit int) ([]*graph.Checkpoint, error) {
	var most any // NULL: no limit
	if limit > 0 {
		most = limit
	}
	before := int64(1<<63 - 1)
	if at.Checkpoint != "" {
		err := s.pool.QueryRow(ctx, s.sql.seq, at.Thread, at.Namespace, at.Checkpoint).Scan(&before)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("%w: thread %q has no checkpoint %s", graph.ErrCheckpointNotFound, at.Thread, at.Checkpoint)
		}
		if err != nil {
			return nil, reading(at.Thread, err)
		}
	}
	rows, _ := s.pool.Query(ctx, s.sql.list, at.Thread, at.Namespace, before, most, s.maxBytes)
	var out []*graph.Checkpoint
	byID := map[string]*graph.Checkpoint{}
	var size int
	var id string
	var channels, versions []string
	var data []byte
	var ids, wantCh, wantV []string
	_, err := pgx.ForEachRow(rows, []any{&id, &channels, &versions, &size, &data}, func() error {
		cp, err := s.decodeCheckpoint(at.Thread, id, size, data)
		if err != nil {
			return err
		}
		out, byID[id], ids = append(out, cp), cp, append(ids, id)
		wantCh, wantV = append(wantCh, channels...), append(wantV, versions...)
		return nil
	})
	if err != nil {
		return nil, reading(at.Thread, err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	values := map[[2]string][]byte{}
	var kind, key, channel string
	var task int
	rows, _ = s.pool.Query(ctx, s.sql.listParts, at.Thread, ids, wantCh, wantV, s.maxBytes)
	_, err = pgx.ForEachRow(rows, []any{&kind, &key, &task, &channel, &size, &data}, func() error {
		if kind == "b" {
			if err := s.checkSize(size); err != nil {
				return fmt.Errorf("channel %q: %w", channel, err)
			}
			values[[2]string{channel, key}] = data
			return nil
		}
		w, err := s.decodeWrite(key, task, size, data)
		byID[key].Writes = append(byID[key].Writes, w)
		return err
	})
	if err != nil {
		return nil, reading(at.Thread, err)
	}
	for _, cp := range out {
		for ch, v := range cp.Versions {
			if data, ok := values[[2]string{ch, v}]; ok {
				cp.Values = append(cp.Values, graph.ChannelValue{Channel: ch, Version: v, Value: data})
			}
		}
		if err := complete(cp); err != nil {
			return nil, reading(at.Thread, err)
		}
	}
	return out, nil
}

// DeleteThread implements graph.Checkpointer, in one transaction: unless a
// run holds the thread, its row goes, and its checkpoints, task records and
// channel values with it.
func (s *Saver) DeleteThread(ctx context.Context, thread string) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var l lease
		err := tx.QueryRow(ctx, s.sql.lockForDelete, thread).Scan(&l.run, &l.until, &l.live)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err := l.busy(thread, ""); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, s.sql.deleteThread, thread)
		return err
	})
	var busy *graph.ThreadBusyError
	switch {
	case errors.As(err, &busy):
		return err
	case err != nil:
		return fmt.Errorf("postgres: deleting thread %q: %w", thread, err)
	}
	return nil
}

// Prune implements graph.Checkpointer, in one transaction that holds the
// thread's row.
func (s *Saver) Prune(ctx context.Context, thread string, p graph.Prune) (int, error) {
	n := 0
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		n = 0 // of this attempt
		var l lease
		err := tx.QueryRow(ctx, s.sql.lockForDelete, thread).Scan(&l.run, &l.until, &l.live)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // no such thread
		}
		if err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, s.sql.pruneList, thread)
		var cps []*graph.Checkpoint
		type chans struct{ channels, versions []string }
		byID := map[string]chans{}
		var c graph.Checkpoint
		var ch chans
		_, err = pgx.ForEachRow(rows, []any{&c.ID, &c.Namespace, &c.Run, &c.Created, &ch.channels, &ch.versions}, func() error {
			cp := c
			cps, byID[c.ID] = append(cps, &cp), ch
			return nil
		})
		if err != nil {
			return err
		}
		doomed := p.Selects(cps)
		if len(doomed) == 0 {
			return nil
		}
		var ids, usedCh, usedV []string
		for _, cp := range cps {
			if doomed[cp.ID] {
				ids = append(ids, cp.ID)
				continue
			}
			usedCh, usedV = append(usedCh, byID[cp.ID].channels...), append(usedV, byID[cp.ID].versions...)
		}
		tag, err := tx.Exec(ctx, s.sql.pruneDelete, thread, ids)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		_, err = tx.Exec(ctx, s.sql.pruneBlobs, thread, usedCh, usedV)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: pruning thread %q: %w", thread, err)
	}
	return n, nil
}

// TakeThread implements graph.Checkpointer, in one transaction: it locks
// the thread's row, reads its lease and takes it unless another run holds
// it. The row stays locked from the read to the change, so the lease
// TakeThread decides on is the one it replaces: a holder that gives the
// thread back meanwhile waits for this transaction, and never leaves it
// deciding on a lease that is no longer there.
func (s *Saver) TakeThread(ctx context.Context, thread, run string, ttl time.Duration) (graph.Lease, error) {
	if thread == "" || run == "" {
		return graph.Lease{}, errors.New("postgres: a lease needs a thread and a run")
	}
	got := graph.Lease{Thread: thread, Run: run}
	err := s.retry.Do(ctx, Transient, func(ctx context.Context, _ int) error {
		if s.beforeLeaseRead != nil {
			s.beforeLeaseRead()
		}
		var l lease
		// One round trip begins the transaction, creates the thread's row
		// if it is new, locks it and reads its lease.
		b := &pgx.Batch{}
		b.BeginTx(pgx.TxOptions{})
		b.Queue(s.sql.createThread, thread)
		b.Queue(s.sql.lockThread, thread).QueryRow(func(r pgx.Row) error { return r.Scan(&l.run, &l.until, &l.live) })
		br := s.pool.SendBatch(ctx, b)
		tx := br.Tx()
		defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
		if err := br.Close(); err != nil {
			return err
		}
		if err := l.busy(thread, run); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, s.sql.takeLease, thread, run, ttl.Microseconds()).Scan(&got.Until, &got.Stop); err != nil {
			return err
		}
		// An attempt after one whose commit's reply was lost finds the
		// lease its own, and renews it.
		return tx.Commit(ctx)
	})
	var busy *graph.ThreadBusyError
	switch {
	case errors.As(err, &busy):
		return graph.Lease{}, err
	case err != nil:
		return graph.Lease{}, fmt.Errorf("postgres: taking thread %q for run %s: %w", thread, run, err)
	}
	return got, nil
}

// ReleaseThread implements graph.Checkpointer.
func (s *Saver) ReleaseThread(ctx context.Context, thread, run string) error {
	err := s.retry.Do(ctx, Transient, func(ctx context.Context, _ int) error {
		_, err := s.pool.Exec(ctx, s.sql.releaseLease, thread, run)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: releasing thread %q from run %s: %w", thread, run, err)
	}
	return nil
}

// StopThread implements graph.Checkpointer.
func (s *Saver) StopThread(ctx context.Context, thread string) (graph.Lease, error) {
	l := graph.Lease{Thread: thread, Stop: true}
	err := s.retry.Do(ctx, Transient, func(ctx context.Context, _ int) error {
		return s.pool.QueryRow(ctx, s.sql.stopLease, thread).Scan(&l.Run, &l.Until)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return graph.Lease{}, nil
	case err != nil:
		return graph.Lease{}, fmt.Errorf("postgres: asking the run on thread %q to stop: %w", thread, err)
	}
	return l, nil
}

// StoredBytes returns the bytes of the documents a thread keeps: its
// checkpoints, task records and channel values (PostgreSQL adds some for
// its rows, indexes and compression).
func (s *Saver) StoredBytes(ctx context.Context, thread string) (int64, error) {
	var n int64
	err := s.retry.Do(ctx, Transient, func(ctx context.Context, _ int) error {
		return s.pool.QueryRow(ctx, s.sql.storedBytes, thread).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: measuring thread %q: %w", thread, err)
	}
	return n, nil
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

func (s *Saver) decodeWrite(id string, task, size int, data []byte) (graph.TaskWrite, error) {
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
