package runstore

import (
	"context"
	"path/filepath"
	"testing"

	sqlite3 "github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSQLiteReadOnly: a store opened read-only lists and gets the runs,
// refuses writes with SQLite's read-only error, and refuses tables it
// would have to create or upgrade, saying to open the store writable once.
func TestSQLiteReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	db := openSQLiteDB(t, path)
	s, err := OpenSQLite(ctx, db)
	require.NoError(t, err)
	create(t, s, newRun("read0001", base()))
	require.NoError(t, db.Close())

	ro, err := driver.Open("file:" + path + "?mode=ro")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ro.Close() })
	rs, err := OpenSQLiteReadOnly(ctx, ro)
	require.NoError(t, err)
	runs, err := rs.List(ctx, ListOptions{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, "read0001", runs[0].ID)
	got, err := rs.Get(ctx, "read0")
	require.NoError(t, err)
	assert.Equal(t, "why read0001?", got.Question)
	err = rs.Create(ctx, newRun("read0002", base()))
	assert.ErrorIs(t, err, sqlite3.READONLY)

	// A database without the tables, and tables of an older version.
	bare := filepath.Join(t.TempDir(), "bare.db")
	openSQLiteDB(t, bare)
	robare, err := driver.Open("file:" + bare + "?mode=ro")
	require.NoError(t, err)
	t.Cleanup(func() { _ = robare.Close() })
	_, err = OpenSQLiteReadOnly(ctx, robare)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "open it once where it can be written")

	old := filepath.Join(t.TempDir(), "old.db")
	olddb := openSQLiteDB(t, old)
	_, err = olddb.Exec(`CREATE TABLE research_runs_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);
		INSERT INTO research_runs_meta VALUES ('schema_version', 1)`)
	require.NoError(t, err)
	roold, err := driver.Open("file:" + old + "?mode=ro")
	require.NoError(t, err)
	t.Cleanup(func() { _ = roold.Close() })
	_, err = OpenSQLiteReadOnly(ctx, roold)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "need an upgrade")
	assert.Contains(t, err.Error(), "open the store once where it can be written")
}
