package sqlite

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	sqlite3 "github.com/ncruces/go-sqlite3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// fileSum is the SHA-256 of the file at path.
func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return sha256.Sum256(b)
}

// TestOpenReadOnly: a store opened read-only reads what was stored, refuses
// every write with SQLite's read-only error and leaves the file as it was —
// opened with mode=ro, or immutable (the fallback where the WAL index
// cannot be used).
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	w, err := Open(ctx, path)
	require.NoError(t, err)
	cp := &graph.Checkpoint{Thread: "t1", ID: "c1", Step: 3, Source: graph.SourceLoop}
	require.NoError(t, w.Put(ctx, cp))
	require.NoError(t, w.Close())
	before := fileSum(t, path)

	for _, immutable := range []bool{false, true} {
		var s *Saver
		if immutable {
			set, err := resolve(nil)
			require.NoError(t, err)
			s, err = openReadOnly(ctx, path, set, true)
			require.NoError(t, err)
		} else {
			s, err = OpenReadOnly(ctx, path)
			require.NoError(t, err)
		}
		got, err := s.Get(ctx, graph.Ref{Thread: "t1"})
		require.NoError(t, err, "immutable=%v", immutable)
		assert.Equal(t, "c1", got.ID)
		assert.Equal(t, 3, got.Step)

		err = s.Put(ctx, &graph.Checkpoint{Thread: "t1", ID: "c2", Parent: "c1", Step: 4, Source: graph.SourceLoop})
		require.Error(t, err, "immutable=%v", immutable)
		assert.ErrorIs(t, err, sqlite3.READONLY, "immutable=%v", immutable)
		_, err = s.TakeThread(ctx, "t1", "run-1", graph.DefaultLease)
		assert.Error(t, err, "immutable=%v", immutable)
		require.NoError(t, s.Close())
		assert.Equal(t, before, fileSum(t, path), "immutable=%v: the file is unchanged", immutable)
	}
}

// TestOpenReadOnlyRefuses: a missing file is not created, and a file that
// is not a deepgraph store is refused, as Open refuses it.
func TestOpenReadOnlyRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	_, err := OpenReadOnly(ctx, missing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing)
	assert.NoFileExists(t, missing)

	foreign := filepath.Join(dir, "other.db")
	sqliteFile(t, foreign, `CREATE TABLE notes (body TEXT)`)
	_, err = OpenReadOnly(ctx, foreign)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "another program")

	empty := filepath.Join(dir, "empty.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	_, err = OpenReadOnly(ctx, empty)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "open it once where it can be written")
}
