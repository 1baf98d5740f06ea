package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	sqlite3 "github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// sqliteFull is the error SQLite gives a write that does not fit: a real
// SQLITE_FULL, from a database bounded by max_page_count.
func sqliteFull(t *testing.T) error {
	t.Helper()
	db, err := driver.Open("file:" + filepath.Join(t.TempDir(), "full.db"))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE t (b BLOB); PRAGMA max_page_count = 3`)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO t VALUES (zeroblob(1000000))`)
	require.ErrorIs(t, err, sqlite3.FULL)
	return err
}

// sqliteReadOnly is a real SQLITE_READONLY: a write to a file opened
// read-only.
func sqliteReadOnly(t *testing.T) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ro.db")
	db, err := driver.Open("file:" + path)
	require.NoError(t, err)
	_, err = db.Exec(`CREATE TABLE t (b BLOB)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	ro, err := driver.Open("file:" + path + "?mode=ro")
	require.NoError(t, err)
	defer ro.Close()
	_, err = ro.Exec(`INSERT INTO t VALUES (1)`)
	require.ErrorIs(t, err, sqlite3.READONLY)
	return err
}

func TestClassifyStoreErr(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "runs.db")
	for _, tc := range []struct {
		name string
		err  error
		file string
		want string // "full", "read-only" or "" (not the store's disk)
	}{
		{"sqlite full", sqliteFull(t), file, "full"},
		{"sqlite read-only", sqliteReadOnly(t), file, "read-only"},
		{"ENOSPC", &os.PathError{Op: "write", Path: file, Err: syscall.ENOSPC}, file, "full"},
		{"EROFS", &os.PathError{Op: "open", Path: file, Err: syscall.EROFS}, file, "read-only"},
		{"EACCES", fmt.Errorf("creating the store: %w", &os.PathError{Op: "open", Path: file, Err: syscall.EACCES}), file, "read-only"},
		{"postgres disk full", &pgconn.PgError{Code: "53100", Message: "could not extend file"}, "", "full"},
		{"postgres read-only", &pgconn.PgError{Code: "25006", Message: "cannot execute INSERT in a read-only transaction"}, "", "read-only"},
		{"postgres other", &pgconn.PgError{Code: "57P01", Message: "terminating connection"}, "", ""},
		{"other", errors.New("the file is damaged"), file, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := classifyStoreErr("WHERE", tc.file, tc.err)
			if tc.want == "" {
				assert.Nil(t, se)
				return
			}
			require.NotNil(t, se)
			assert.Equal(t, tc.want == "full", se.Full)
			assert.ErrorIs(t, se, ErrStoreUnwritable)
			assert.ErrorIs(t, se, tc.err)
			msg := se.Error()
			assert.Contains(t, msg, "the run store WHERE")
			assert.Contains(t, msg, "--store")
			assert.Contains(t, msg, "--no-save")
			if se.Full {
				assert.Contains(t, msg, "disk is full")
				if tc.file != "" {
					assert.Contains(t, msg, "free)", "the space left is said")
				}
			} else {
				assert.Contains(t, msg, "read-only")
				assert.Contains(t, msg, "research runs and research show can still read it")
			}
		})
	}
}

// failingSaver is a MemorySaver whose writes fail with err from the
// failAt-th Put on.
type failingSaver struct {
	*graph.MemorySaver
	puts   atomic.Int32
	failAt int32
	err    error
}

func (f *failingSaver) Put(ctx context.Context, cp *graph.Checkpoint) error {
	if f.puts.Add(1) >= f.failAt {
		return f.err
	}
	return f.MemorySaver.Put(ctx, cp)
}

type countState struct{ N int }

func countGraph(t *testing.T, cp graph.Checkpointer) *graph.Compiled[countState] {
	t.Helper()
	n := graph.Value(func(s *countState) *int { return &s.N })
	g := graph.New[countState](n)
	step := func(_ context.Context, s countState) (graph.Update[countState], error) {
		return graph.Writes(n.Set(s.N + 1)), nil
	}
	g.AddNode("a", step)
	g.AddNode("b", step)
	g.AddNode("c", step)
	g.AddSequence(graph.Start, "a", "b", "c", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(cp))
	require.NoError(t, err)
	return run
}

// TestGoOnWithoutSaving: a store failing during a run does not end it; the
// failure is warned about once, naming the store, and SaveFailure reports
// it (classified: a full disk here); the store keeps the checkpoints
// written before. Without GoOnWithoutSaving the run fails.
func TestGoOnWithoutSaving(t *testing.T) {
	ctx := context.Background()
	full := &os.PathError{Op: "write", Path: "/data/runs.db-wal", Err: syscall.ENOSPC}

	bare := &failingSaver{MemorySaver: graph.NewMemorySaver(), failAt: 2, err: full}
	_, err := countGraph(t, bare).Invoke(ctx, countState{}, graph.Thread("t"))
	require.ErrorIs(t, err, syscall.ENOSPC, "without the guard, the store's failure ends the run")

	saver := &failingSaver{MemorySaver: graph.NewMemorySaver(), failAt: 2, err: full}
	var logs bytes.Buffer
	st := &Store{Checkpointer: saver, Where: "/data/runs.db"}
	st.GoOnWithoutSaving(slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, st.SaveFailure())
	out, err := countGraph(t, st.Checkpointer).Invoke(ctx, countState{}, graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, 3, out.N, "the run went on to its end")

	fail := st.SaveFailure()
	require.Error(t, fail)
	assert.ErrorIs(t, fail, ErrStoreUnwritable)
	var se *StoreError
	require.ErrorAs(t, fail, &se)
	assert.True(t, se.Full)
	assert.Contains(t, fail.Error(), "/data/runs.db")
	assert.Equal(t, 1, strings.Count(logs.String(), "level=WARN"), "one warning:\n%s", logs.String())
	assert.Contains(t, logs.String(), "cannot be resumed")
	assert.Equal(t, int32(2), saver.puts.Load(), "no write was tried after the failure")

	got, err := saver.MemorySaver.Get(ctx, graph.Ref{Thread: "t"})
	require.NoError(t, err)
	assert.Equal(t, 0, got.Step, "the store keeps the checkpoint saved before the failure")
}

// TestGoOnWithoutSavingKeepsConflicts: a conflict with another writer is
// the run's failure, not the store's: it still ends the run.
func TestGoOnWithoutSavingKeepsConflicts(t *testing.T) {
	conflict := &graph.ConflictingCheckpointError{Thread: "t"}
	saver := &failingSaver{MemorySaver: graph.NewMemorySaver(), failAt: 2, err: conflict}
	st := &Store{Checkpointer: saver, Where: "/data/runs.db"}
	st.GoOnWithoutSaving(nil)
	_, err := countGraph(t, st.Checkpointer).Invoke(context.Background(), countState{}, graph.Thread("t"))
	require.ErrorIs(t, err, graph.ErrCheckpointConflict)
	assert.NoError(t, st.SaveFailure())
}
