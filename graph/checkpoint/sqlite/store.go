package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	sqlite3 "github.com/ncruces/go-sqlite3"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/internal/storecodec"
)

// The statements. A document is read back only when it is within the
// limit (?1): length reads a BLOB's size without loading it.
const (
	// newest of namespace ?2 of thread ?1, whether ?3 is a checkpoint there,
	// and the thread's lease.
	sqlHeads = `SELECT
		(SELECT id FROM deepgraph_checkpoints WHERE thread = ?1 AND ns = ?2 ORDER BY seq DESC LIMIT 1),
		EXISTS (SELECT 1 FROM deepgraph_checkpoints WHERE thread = ?1 AND ns = ?2 AND id = ?3),
		(SELECT run FROM deepgraph_leases WHERE thread = ?1),
		(SELECT expires FROM deepgraph_leases WHERE thread = ?1)`
	sqlInsertCheckpoint = `INSERT INTO deepgraph_checkpoints (thread, ns, id, parent, step, source, created, run, versions, data)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlInsertBlob = `INSERT INTO deepgraph_blobs (thread, channel, version, ns, data) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`
	sqlPutWrite = `INSERT INTO deepgraph_writes (thread, checkpoint, task, data) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (thread, checkpoint, task) DO UPDATE SET data = ?4`

	docColumns = `c.id, length(c.data), iif(length(c.data) <= ?1, c.data, NULL)`
	sqlNewest  = `SELECT ` + docColumns + ` FROM deepgraph_checkpoints c WHERE c.thread = ?2 AND c.ns = ?3
		ORDER BY c.seq DESC LIMIT 1`
	sqlByID = `SELECT ` + docColumns + ` FROM deepgraph_checkpoints c WHERE c.thread = ?2 AND c.ns = ?3 AND c.id = ?4`
	// Newest first, before the checkpoint with seq ?4, at most ?5.
	sqlList = `SELECT ` + docColumns + ` FROM deepgraph_checkpoints c WHERE c.thread = ?2 AND c.ns = ?3 AND c.seq < ?4
		ORDER BY c.seq DESC LIMIT ?5`
	sqlSeq    = `SELECT seq FROM deepgraph_checkpoints WHERE thread = ?1 AND ns = ?2 AND id = ?3`
	sqlWrites = `SELECT task, length(data), iif(length(data) <= ?1, data, NULL) FROM deepgraph_writes
		WHERE thread = ?2 AND checkpoint = ?3 ORDER BY task`
	sqlBlob = `SELECT length(data), iif(length(data) <= ?1, data, NULL) FROM deepgraph_blobs
		WHERE thread = ?2 AND channel = ?3 AND version = ?4`
	sqlLease = `SELECT run, expires, stop FROM deepgraph_leases WHERE thread = ?`
)

// Put implements graph.Checkpointer: in one transaction, it checks the
// thread's lease and that cp's parent is the newest checkpoint of its
// namespace (or, for a fork, that it exists), and stores cp, its new
// channel values and its task records.
func (s *Saver) Put(ctx context.Context, cp *graph.Checkpoint) error {
	if err := storecodec.Validate(cp); err != nil {
		return err
	}
	data, err := storecodec.EncodeCheckpoint(cp)
	if err != nil {
		return err
	}
	versions, err := encodeVersions(cp.Versions)
	if err != nil {
		return err
	}
	records := make([][]byte, len(cp.Writes))
	for i, w := range cp.Writes {
		if records[i], err = storecodec.EncodeWrite(w); err == nil {
			err = s.checkSize(len(records[i]))
		}
		if err != nil {
			return s.errorf(err, "storing the record of task %d of checkpoint %s of thread %q", w.Task, cp.ID, cp.Thread)
		}
	}
	for _, cv := range cp.Values {
		if err := s.checkSize(len(cv.Value)); err != nil {
			return s.errorf(err, "storing channel %q of checkpoint %s of thread %q", cv.Channel, cp.ID, cp.Thread)
		}
	}
	if err = s.checkSize(len(data)); err == nil {
		err = s.write(ctx, func(tx *sql.Tx) error { return s.put(ctx, tx, cp, data, versions, records) })
	}
	var conflict *graph.ConflictingCheckpointError
	var busy *graph.ThreadBusyError
	switch {
	case errors.As(err, &conflict), errors.As(err, &busy):
		return err // the state of the thread, not a failure of the store
	case err != nil:
		return s.errorf(err, "storing checkpoint %s of thread %q", cp.ID, cp.Thread)
	}
	return nil
}

// encodeVersions is the versions column: the map as JSON, "" for none.
func encodeVersions(v map[string]string) (string, error) {
	if len(v) == 0 {
		return "", nil
	}
	data, err := json.Marshal(v)
	return string(data), err
}

// put stores cp, encoded as data, in tx.
func (s *Saver) put(ctx context.Context, tx *sql.Tx, cp *graph.Checkpoint, data []byte, versions string, records [][]byte) error {
	var newest, holder sql.NullString
	var expires sql.NullInt64
	var parentExists bool
	if err := tx.StmtContext(ctx, s.heads).QueryRowContext(ctx, cp.Thread, cp.Namespace, cp.Parent).Scan(&newest, &parentExists, &holder, &expires); err != nil {
		return err
	}
	if err := storecodec.Busy(cp.Thread, cp.Run, holder.String, time.UnixMilli(expires.Int64), time.Now()); err != nil {
		return err
	}
	if err := storecodec.Check(cp, newest.String, parentExists); err != nil {
		return err
	}
	_, err := tx.StmtContext(ctx, s.insertCheckpoint).ExecContext(ctx, cp.Thread, cp.Namespace, cp.ID, cp.Parent, cp.Step, string(cp.Source),
		cp.Created.UTC().Format(time.RFC3339Nano), cp.Run, versions, data)
	if errors.Is(err, sqlite3.CONSTRAINT_UNIQUE) {
		return fmt.Errorf("the thread already has a checkpoint %s; an id is stored once per thread", cp.ID)
	}
	if err != nil {
		return err
	}
	blob := tx.StmtContext(ctx, s.insertBlob)
	for _, cv := range cp.Values {
		if _, err := blob.ExecContext(ctx, cp.Thread, cv.Channel, cv.Version, cp.Namespace, []byte(cv.Value)); err != nil {
			return err
		}
	}
	write := tx.StmtContext(ctx, s.putWrite)
	for i, w := range cp.Writes {
		if _, err := write.ExecContext(ctx, cp.Thread, cp.ID, w.Task, records[i]); err != nil {
			return err
		}
	}
	return nil
}

// PutWrites implements graph.Checkpointer: it stores the records in one
// transaction, each replacing an earlier record of the same task, if the
// checkpoint exists and no other run holds the thread.
func (s *Saver) PutWrites(ctx context.Context, at graph.Ref, run string, writes ...graph.TaskWrite) error {
	if len(writes) == 0 {
		return nil
	}
	docs := make([][]byte, len(writes))
	for i, w := range writes {
		data, err := storecodec.EncodeWrite(w)
		if err != nil {
			return fmt.Errorf("sqlite: checkpoint %s of thread %q: %w", at.Checkpoint, at.Thread, err)
		}
		if err := s.checkSize(len(data)); err != nil {
			return s.errorf(err, "storing the record of task %d of checkpoint %s of thread %q", w.Task, at.Checkpoint, at.Thread)
		}
		docs[i] = data
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var holder sql.NullString
		var expires sql.NullInt64
		var exists bool
		if err := tx.StmtContext(ctx, s.heads).QueryRowContext(ctx, at.Thread, at.Namespace, at.Checkpoint).Scan(new(sql.NullString), &exists, &holder, &expires); err != nil {
			return err
		}
		if err := storecodec.Busy(at.Thread, run, holder.String, time.UnixMilli(expires.Int64), time.Now()); err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("%w: thread %q has no checkpoint %s for these task records (was the thread deleted?)", graph.ErrCheckpointNotFound, at.Thread, at)
		}
		stmt := tx.StmtContext(ctx, s.putWrite)
		for i, w := range writes {
			if _, err := stmt.ExecContext(ctx, at.Thread, at.Checkpoint, w.Task, docs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	var busy *graph.ThreadBusyError
	if err != nil && !errors.As(err, &busy) {
		return s.errorf(err, "storing task records of checkpoint %s of thread %q", at.Checkpoint, at.Thread)
	}
	return err
}

// Get implements graph.Checkpointer.
func (s *Saver) Get(ctx context.Context, at graph.Ref) (*graph.Checkpoint, error) {
	var cp *graph.Checkpoint
	err := s.read(ctx, func(tx *sql.Tx) error {
		var row *sql.Row
		if at.Checkpoint == "" {
			row = tx.QueryRowContext(ctx, sqlNewest, s.maxBytes, at.Thread, at.Namespace)
		} else {
			row = tx.QueryRowContext(ctx, sqlByID, s.maxBytes, at.Thread, at.Namespace, at.Checkpoint)
		}
		var err error
		if cp, err = s.scanCheckpoint(row, at.Thread); err != nil {
			return err
		}
		return s.complete(ctx, tx, cp)
	})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, graph.ErrCheckpointNotFound
	case err != nil:
		return nil, s.errorf(err, "reading thread %q", at.Thread)
	}
	return cp, nil
}

// complete reads cp's task records and channel values.
func (s *Saver) complete(ctx context.Context, tx *sql.Tx, cp *graph.Checkpoint) error {
	var err error
	if cp.Writes, err = s.readWrites(ctx, tx, cp.Thread, cp.ID); err != nil {
		return err
	}
	cp.Values, err = s.readValues(ctx, tx, cp)
	return err
}

// List implements graph.Checkpointer.
func (s *Saver) List(ctx context.Context, at graph.Ref, limit int) ([]*graph.Checkpoint, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	var out []*graph.Checkpoint
	err := s.read(ctx, func(tx *sql.Tx) error {
		before := int64(1<<63 - 1)
		if at.Checkpoint != "" {
			err := tx.QueryRowContext(ctx, sqlSeq, at.Thread, at.Namespace, at.Checkpoint).Scan(&before)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: thread %q has no checkpoint %s", graph.ErrCheckpointNotFound, at.Thread, at.Checkpoint)
			}
			if err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, sqlList, s.maxBytes, at.Thread, at.Namespace, before, limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			cp, err := s.scanCheckpoint(rows, at.Thread)
			if err != nil {
				rows.Close()
				return err
			}
			out = append(out, cp)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		for _, cp := range out {
			if err := s.complete(ctx, tx, cp); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, graph.ErrCheckpointNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, s.errorf(err, "listing the checkpoints of thread %q", at.Thread)
	}
	return out, nil
}

// DeleteThread implements graph.Checkpointer: in one transaction, unless a
// run holds the thread; then it gives the space back to the file system
// when the file allows it (a file made by this version does).
func (s *Saver) DeleteThread(ctx context.Context, thread string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := s.refuseBusy(ctx, tx, thread); err != nil {
			return err
		}
		for _, table := range []string{"deepgraph_writes", "deepgraph_checkpoints", "deepgraph_blobs", "deepgraph_leases"} {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+table+" WHERE thread = ?", thread); err != nil {
				return err
			}
		}
		return nil
	})
	var busy *graph.ThreadBusyError
	switch {
	case errors.As(err, &busy):
		return err
	case err != nil:
		return s.errorf(err, "deleting thread %q", thread)
	}
	s.vacuum(ctx)
	return nil
}

// refuseBusy fails with a *graph.ThreadBusyError when a run holds thread.
func (s *Saver) refuseBusy(ctx context.Context, tx *sql.Tx, thread string) error {
	var run string
	var expires int64
	var stop bool
	err := tx.QueryRowContext(ctx, sqlLease, thread).Scan(&run, &expires, &stop)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return storecodec.Busy(thread, "", run, time.UnixMilli(expires), time.Now())
}

// vacuum gives freed pages back to the file system, in a file whose
// auto_vacuum is incremental; elsewhere it does nothing. A failure costs
// only space, so it is not reported.
func (s *Saver) vacuum(ctx context.Context) {
	_, _ = s.writer.ExecContext(ctx, "PRAGMA incremental_vacuum")
}

// Prune implements graph.Checkpointer, in one transaction.
func (s *Saver) Prune(ctx context.Context, thread string, p graph.Prune) (int, error) {
	n := 0
	err := s.write(ctx, func(tx *sql.Tx) error {
		n = 0 // of this attempt
		rows, err := tx.QueryContext(ctx, `SELECT id, ns, run, created, versions FROM deepgraph_checkpoints WHERE thread = ? ORDER BY seq`, thread)
		if err != nil {
			return err
		}
		var cps []*graph.Checkpoint
		versions := map[string]string{}
		for rows.Next() {
			var cp graph.Checkpoint
			var created, vs string
			if err := rows.Scan(&cp.ID, &cp.Namespace, &cp.Run, &created, &vs); err != nil {
				rows.Close()
				return err
			}
			cp.Created, _ = time.Parse(time.RFC3339Nano, created) // written by put
			cps, versions[cp.ID] = append(cps, &cp), vs
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		doomed := p.Selects(cps)
		if len(doomed) == 0 {
			return nil
		}
		used := map[[2]string]bool{}
		for _, cp := range cps {
			if doomed[cp.ID] {
				for _, table := range []string{"deepgraph_writes WHERE thread = ? AND checkpoint = ?", "deepgraph_checkpoints WHERE thread = ? AND id = ?"} {
					if _, err := tx.ExecContext(ctx, "DELETE FROM "+table, thread, cp.ID); err != nil {
						return err
					}
				}
				n++
				continue
			}
			if vs := versions[cp.ID]; vs != "" {
				var m map[string]string
				if err := json.Unmarshal([]byte(vs), &m); err != nil {
					return fmt.Errorf("%w: the versions of checkpoint %s: %v", storecodec.ErrCorrupt, cp.ID, err)
				}
				for ch, v := range m {
					used[[2]string{ch, v}] = true
				}
			}
		}
		return s.dropUnused(ctx, tx, thread, used)
	})
	if err != nil {
		return 0, s.errorf(err, "pruning thread %q", thread)
	}
	if n > 0 {
		s.vacuum(ctx)
	}
	return n, nil
}

// dropUnused deletes the channel values of thread that used does not hold.
func (s *Saver) dropUnused(ctx context.Context, tx *sql.Tx, thread string, used map[[2]string]bool) error {
	rows, err := tx.QueryContext(ctx, `SELECT channel, version FROM deepgraph_blobs WHERE thread = ?`, thread)
	if err != nil {
		return err
	}
	var unused [][2]string
	for rows.Next() {
		var k [2]string
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			rows.Close()
			return err
		}
		if !used[k] {
			unused = append(unused, k)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	for _, k := range unused {
		if _, err := tx.ExecContext(ctx, `DELETE FROM deepgraph_blobs WHERE thread = ? AND channel = ? AND version = ?`, thread, k[0], k[1]); err != nil {
			return err
		}
	}
	return nil
}

// TakeThread implements graph.Checkpointer.
func (s *Saver) TakeThread(ctx context.Context, thread, run string, ttl time.Duration) (graph.Lease, error) {
	if thread == "" || run == "" {
		return graph.Lease{}, errors.New("sqlite: a lease needs a thread and a run")
	}
	var lease graph.Lease
	err := s.write(ctx, func(tx *sql.Tx) error {
		var holder string
		var expires int64
		var stop bool
		err := tx.QueryRowContext(ctx, sqlLease, thread).Scan(&holder, &expires, &stop)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		now := time.Now()
		if err := storecodec.Busy(thread, run, holder, time.UnixMilli(expires), now); err != nil {
			return err
		}
		lease = graph.Lease{Thread: thread, Run: run, Until: now.Add(ttl).Truncate(time.Millisecond), Stop: holder == run && stop}
		_, err = tx.ExecContext(ctx, `INSERT INTO deepgraph_leases (thread, run, expires, stop) VALUES (?1, ?2, ?3, ?4)
			ON CONFLICT (thread) DO UPDATE SET run = ?2, expires = ?3, stop = ?4`, thread, run, lease.Until.UnixMilli(), lease.Stop)
		return err
	})
	var busy *graph.ThreadBusyError
	switch {
	case errors.As(err, &busy):
		return graph.Lease{}, err
	case err != nil:
		return graph.Lease{}, s.errorf(err, "taking thread %q for run %s", thread, run)
	}
	return lease, nil
}

// ReleaseThread implements graph.Checkpointer.
func (s *Saver) ReleaseThread(ctx context.Context, thread, run string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM deepgraph_leases WHERE thread = ? AND run = ?`, thread, run)
		return err
	})
	if err != nil {
		return s.errorf(err, "releasing thread %q from run %s", thread, run)
	}
	return nil
}

// StopThread implements graph.Checkpointer.
func (s *Saver) StopThread(ctx context.Context, thread string) (graph.Lease, error) {
	var lease graph.Lease
	err := s.write(ctx, func(tx *sql.Tx) error {
		var expires int64
		err := tx.QueryRowContext(ctx, `UPDATE deepgraph_leases SET stop = 1 WHERE thread = ? AND expires > ? RETURNING run, expires`,
			thread, time.Now().UnixMilli()).Scan(&lease.Run, &expires)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		lease.Thread, lease.Until, lease.Stop = thread, time.UnixMilli(expires), true
		return nil
	})
	if err != nil {
		return graph.Lease{}, s.errorf(err, "asking the run on thread %q to stop", thread)
	}
	return lease, nil
}

// StoredBytes returns the bytes of the documents a thread keeps in the
// file: its checkpoints, task records and channel values (SQLite adds some
// for its pages and indexes).
func (s *Saver) StoredBytes(ctx context.Context, thread string) (int64, error) {
	var n int64
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT
			(SELECT coalesce(sum(length(data)), 0) FROM deepgraph_checkpoints WHERE thread = ?1) +
			(SELECT coalesce(sum(length(data)), 0) FROM deepgraph_writes WHERE thread = ?1) +
			(SELECT coalesce(sum(length(data)), 0) FROM deepgraph_blobs WHERE thread = ?1)`, thread).Scan(&n)
	})
	if err != nil {
		return 0, s.errorf(err, "measuring thread %q", thread)
	}
	return n, nil
}

// write runs fn in a write transaction, which begins IMMEDIATE.
func (s *Saver) write(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.inTx(ctx, s.writer, nil, fn)
}

// read runs fn in a read transaction: one snapshot of the file.
func (s *Saver) read(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.inTx(ctx, s.db, &sql.TxOptions{ReadOnly: true}, fn)
}

// inTx runs fn in a transaction, and again in a new one while it fails
// with a busy or locked database (Transient), as WithRetry says. SQLite
// reports such an error before the commit takes effect, so no attempt
// repeats a committed one.
func (s *Saver) inTx(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	return s.retry.Do(ctx, Transient, func(ctx context.Context, _ int) error { return tryTx(ctx, db, opts, fn) })
}

func tryTx(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// checkSize refuses a document over the limit.
func (s *Saver) checkSize(n int) error {
	if n > s.maxBytes {
		return fmt.Errorf("%w: the document is %d bytes, over the limit of %d (sqlite.WithMaxBytes)", graph.ErrCheckpointTooLarge, n, s.maxBytes)
	}
	return nil
}

// scanCheckpoint reads a checkpoint of thread from the docColumns of row.
func (s *Saver) scanCheckpoint(row interface{ Scan(...any) error }, thread string) (*graph.Checkpoint, error) {
	var id string
	var size int
	var data []byte
	if err := row.Scan(&id, &size, &data); err != nil {
		return nil, err
	}
	cp, err := s.decodeCheckpoint(thread, id, size, data)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	return cp, nil
}

// decodeCheckpoint decodes checkpoint id of thread, stored in size bytes,
// given as data when they are within the limit.
func (s *Saver) decodeCheckpoint(thread, id string, size int, data []byte) (*graph.Checkpoint, error) {
	if err := s.checkSize(size); err != nil {
		return nil, err
	}
	cp, err := storecodec.DecodeCheckpoint(data, s.maxBytes)
	if err == nil && (cp.Thread != thread || cp.ID != id) {
		return nil, fmt.Errorf("%w: it holds checkpoint %s of thread %q", storecodec.ErrCorrupt, cp.ID, cp.Thread)
	}
	return cp, err
}

// readWrites reads the task records of checkpoint id, in task order.
func (s *Saver) readWrites(ctx context.Context, tx *sql.Tx, thread, id string) ([]graph.TaskWrite, error) {
	rows, err := tx.QueryContext(ctx, sqlWrites, s.maxBytes, thread, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []graph.TaskWrite
	for rows.Next() {
		var task, size int
		var data []byte
		if err := rows.Scan(&task, &size, &data); err != nil {
			return nil, err
		}
		w, err := s.decodeWrite(task, size, data)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: the record of task %d: %w", id, task, err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// readValues reads the value of every channel cp names, by channel name.
func (s *Saver) readValues(ctx context.Context, tx *sql.Tx, cp *graph.Checkpoint) ([]graph.ChannelValue, error) {
	if len(cp.Versions) == 0 {
		return nil, nil
	}
	channels := make([]string, 0, len(cp.Versions))
	for ch := range cp.Versions {
		channels = append(channels, ch)
	}
	slices.Sort(channels)
	out := make([]graph.ChannelValue, 0, len(channels))
	for _, ch := range channels {
		var size int
		var data []byte
		err := tx.QueryRowContext(ctx, sqlBlob, s.maxBytes, cp.Thread, ch, cp.Versions[ch]).Scan(&size, &data)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("%w: checkpoint %s refers to version %s of channel %q, which is not stored", storecodec.ErrCorrupt, cp.ID, cp.Versions[ch], ch)
		}
		if err == nil {
			err = s.checkSize(size)
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: channel %q: %w", cp.ID, ch, err)
		}
		out = append(out, graph.ChannelValue{Channel: ch, Version: cp.Versions[ch], Value: data})
	}
	return out, nil
}

// decodeWrite decodes the record of task, stored in size bytes, given as
// data when they are within the limit.
func (s *Saver) decodeWrite(task, size int, data []byte) (graph.TaskWrite, error) {
	if err := s.checkSize(size); err != nil {
		return graph.TaskWrite{}, err
	}
	w, err := storecodec.DecodeWrite(data, s.maxBytes)
	if err == nil && w.Task != task {
		return w, fmt.Errorf("%w: it holds the record of task %d", storecodec.ErrCorrupt, w.Task)
	}
	return w, err
}
