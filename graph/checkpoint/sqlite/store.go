package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/internal/storecodec"
)

// The statements. A document is read back only when it is within the
// limit (?1): length reads a BLOB's size without loading it.
const (
	// newest and whether ?2 is a checkpoint of thread ?1.
	sqlHeads = `SELECT
		(SELECT id FROM deepgraph_checkpoints WHERE thread = ?1 ORDER BY seq DESC LIMIT 1),
		EXISTS (SELECT 1 FROM deepgraph_checkpoints WHERE thread = ?1 AND id = ?2)`
	sqlInsertCheckpoint = `INSERT INTO deepgraph_checkpoints (thread, id, parent, step, source, created, data)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	sqlPutWrite = `INSERT INTO deepgraph_writes (thread, checkpoint, task, data) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (thread, checkpoint, task) DO UPDATE SET data = ?4`

	docColumns = `c.id, length(c.data), iif(length(c.data) <= ?1, c.data, NULL)`
	sqlNewest  = `SELECT ` + docColumns + ` FROM deepgraph_checkpoints c WHERE c.thread = ?2
		ORDER BY c.seq DESC LIMIT 1`
	sqlByID = `SELECT ` + docColumns + ` FROM deepgraph_checkpoints c WHERE c.thread = ?2 AND c.id = ?3`
	sqlList = `SELECT ` + docColumns + ` FROM deepgraph_checkpoints c WHERE c.thread = ?2
		ORDER BY c.seq DESC LIMIT ?3`
	sqlWrites = `SELECT task, length(data), iif(length(data) <= ?1, data, NULL) FROM deepgraph_writes
		WHERE thread = ?2 AND checkpoint = ?3 ORDER BY task`
)

// Put implements graph.Checkpointer: in one transaction, it checks that
// cp's parent is the thread's newest checkpoint (or, for a fork, that it
// exists), stores cp and makes it the newest. It returns a
// *graph.ConflictingCheckpointError when another writer moved the thread
// on.
func (s *Saver) Put(ctx context.Context, cp *graph.Checkpoint) error {
	if err := storecodec.Validate(cp); err != nil {
		return err
	}
	data, err := storecodec.EncodeCheckpoint(cp)
	if err != nil {
		return err
	}
	if err = s.checkSize(len(data)); err == nil {
		err = s.write(ctx, func(tx *sql.Tx) error { return s.put(ctx, tx, cp, data) })
	}
	var conflict *graph.ConflictingCheckpointError
	switch {
	case errors.As(err, &conflict):
		return err // the state of the thread, not a failure of the store
	case err != nil:
		return s.errorf(err, "storing checkpoint %s of thread %q", cp.ID, cp.Thread)
	}
	return nil
}

// put stores cp, encoded as data, in tx.
func (s *Saver) put(ctx context.Context, tx *sql.Tx, cp *graph.Checkpoint, data []byte) error {
	var newest sql.NullString
	var parentExists bool
	if err := tx.StmtContext(ctx, s.heads).QueryRowContext(ctx, cp.Thread, cp.Parent).Scan(&newest, &parentExists); err != nil {
		return err
	}
	if err := storecodec.Check(cp, newest.String, parentExists); err != nil {
		return err
	}
	_, err := tx.StmtContext(ctx, s.insertCheckpoint).ExecContext(ctx, cp.Thread, cp.ID, cp.Parent, cp.Step, string(cp.Source),
		cp.Created.UTC().Format(time.RFC3339Nano), data)
	if code(err) == sqlite3.SQLITE_CONSTRAINT_UNIQUE {
		return fmt.Errorf("the thread already has a checkpoint %s; an id is stored once per thread", cp.ID)
	}
	return err
}

// PutWrites implements graph.Checkpointer: it stores the records in one
// transaction, each replacing an earlier record of the same task.
func (s *Saver) PutWrites(ctx context.Context, thread, id string, writes ...graph.TaskWrite) error {
	if len(writes) == 0 {
		return nil
	}
	docs := make([][]byte, len(writes))
	for i, w := range writes {
		data, err := storecodec.EncodeWrite(w)
		if err != nil {
			return fmt.Errorf("sqlite: checkpoint %s of thread %q: %w", id, thread, err)
		}
		if err := s.checkSize(len(data)); err != nil {
			return s.errorf(err, "storing the record of task %d of checkpoint %s of thread %q", w.Task, id, thread)
		}
		docs[i] = data
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		stmt := tx.StmtContext(ctx, s.putWrite)
		for i, w := range writes {
			if _, err := stmt.ExecContext(ctx, thread, id, w.Task, docs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return s.errorf(err, "storing task records of checkpoint %s of thread %q", id, thread)
	}
	return nil
}

// Get implements graph.Checkpointer.
func (s *Saver) Get(ctx context.Context, thread, id string) (*graph.Checkpoint, error) {
	var cp *graph.Checkpoint
	err := s.read(ctx, func(tx *sql.Tx) error {
		var row *sql.Row
		if id == "" {
			row = tx.QueryRowContext(ctx, sqlNewest, s.maxBytes, thread)
		} else {
			row = tx.QueryRowContext(ctx, sqlByID, s.maxBytes, thread, id)
		}
		var err error
		if cp, err = s.scanCheckpoint(row, thread); err != nil {
			return err
		}
		cp.Writes, err = s.readWrites(ctx, tx, thread, cp.ID)
		return err
	})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, graph.ErrCheckpointNotFound
	case err != nil:
		return nil, s.errorf(err, "reading thread %q", thread)
	}
	return cp, nil
}

// List implements graph.Checkpointer.
func (s *Saver) List(ctx context.Context, thread string, limit int) ([]*graph.Checkpoint, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	var out []*graph.Checkpoint
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, sqlList, s.maxBytes, thread, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			cp, err := s.scanCheckpoint(rows, thread)
			if err != nil {
				return err
			}
			out = append(out, cp)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.errorf(err, "listing the checkpoints of thread %q", thread)
	}
	return out, nil
}

// DeleteThread implements graph.Checkpointer.
func (s *Saver) DeleteThread(ctx context.Context, thread string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, table := range []string{"deepgraph_writes", "deepgraph_checkpoints"} {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+table+" WHERE thread = ?", thread); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return s.errorf(err, "deleting thread %q", thread)
	}
	return nil
}

// write runs fn in a write transaction, which begins IMMEDIATE.
func (s *Saver) write(ctx context.Context, fn func(*sql.Tx) error) error {
	return inTx(ctx, s.writer, nil, fn)
}

// read runs fn in a read transaction: one snapshot of the file.
func (s *Saver) read(ctx context.Context, fn func(*sql.Tx) error) error {
	return inTx(ctx, s.db, &sql.TxOptions{ReadOnly: true}, fn)
}

func inTx(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
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
