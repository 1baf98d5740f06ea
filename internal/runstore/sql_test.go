package runstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	checkpointsqlite "github.com/deepgraph/deepgraph/graph/checkpoint/sqlite"
)

// sqlEnv is a database for the tests of a SQL store.
type sqlEnv struct {
	// openErr opens the store (again) over the database.
	openErr func(ctx context.Context) (Store, error)
	// exec runs a statement behind the store's back; {runs} and {meta}
	// stand for its tables.
	exec func(t *testing.T, query string, args ...any)
}

func (e sqlEnv) open(t *testing.T) Store {
	t.Helper()
	s, err := e.openErr(t.Context())
	require.NoError(t, err)
	return s
}

// sqliteDSN is the data source name of a SQLite file as the checkpoint
// store opens it.
func sqliteDSN(path string) string {
	return "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate"
}

// openSQLiteDB opens a database/sql handle to the SQLite file, closed in
// cleanup.
func openSQLiteDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", sqliteDSN(path))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// newSQLite is a fresh SQLite file in t.TempDir().
func newSQLite(t *testing.T) sqlEnv {
	db := openSQLiteDB(t, filepath.Join(t.TempDir(), "runs.db"))
	names := strings.NewReplacer("{runs}", "research_runs", "{meta}", "research_runs_meta")
	return sqlEnv{
		openErr: func(ctx context.Context) (Store, error) { return OpenSQLite(ctx, db) },
		exec: func(t *testing.T, query string, args ...any) {
			_, err := db.ExecContext(t.Context(), names.Replace(query), args...)
			require.NoError(t, err)
		},
	}
}

// postgresDSN returns the DSN of the test server, or skips the test.
func postgresDSN(t *testing.T) string {
	dsn := os.Getenv("DEEPGRAPH_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("PostgreSQL tests skipped: set DEEPGRAPH_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run them (.ci/run sets it when a server answers on 127.0.0.1:5432)")
	}
	return dsn
}

// newPostgres is a fresh schema of its own, first in the pool's
// search_path, dropped in cleanup.
func newPostgres(t *testing.T) sqlEnv {
	pool, schema := newPostgresPool(t)
	names := strings.NewReplacer("{runs}", pgx.Identifier{schema, "research_runs"}.Sanitize(),
		"{meta}", pgx.Identifier{schema, "research_runs_meta"}.Sanitize())
	return sqlEnv{
		openErr: func(ctx context.Context) (Store, error) { return OpenPostgres(ctx, pool) },
		exec: func(t *testing.T, query string, args ...any) {
			_, err := pool.Exec(t.Context(), names.Replace(query), args...)
			require.NoError(t, err)
		},
	}
}

// newPostgresPool connects to the test server with a fresh schema of its
// own first in search_path, and returns the pool and the schema's name; the
// schema is dropped in cleanup.
func newPostgresPool(t *testing.T) (*pgxpool.Pool, string) {
	cfg, err := pgxpool.ParseConfig(postgresDSN(t))
	require.NoError(t, err)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "runstore_test_" + hex.EncodeToString(b[:])
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
		assert.NoError(t, err)
		pool.Close()
	})
	_, err = pool.Exec(t.Context(), `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	return pool, schema
}

// The behaviour of the SQL stores beyond Store's.

func TestSQLiteDatabase(t *testing.T) {
	testSQL(t, newSQLite)
}

func TestPostgresDatabase(t *testing.T) {
	testSQL(t, newPostgres)
}

func testSQL(t *testing.T, env func(t *testing.T) sqlEnv) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e sqlEnv)
	}{
		{"ReopenKeepsRuns", testReopen},
		{"OversizeDocumentRefusedOnRead", testOversizeOnRead},
		{"CorruptDocumentRefusedOnRead", testCorruptOnRead},
		{"NewerSchemaRefused", testNewerSchema},
		{"ConcurrentOpens", testConcurrentOpens},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, env(t)) })
	}
}

func testReopen(t *testing.T, e sqlEnv) {
	r := newRun("keep0001", base())
	r.Settings = json.RawMessage(`{"model":"m"}`)
	create(t, e.open(t), r)
	got, err := e.open(t).Get(t.Context(), "keep")
	require.NoError(t, err)
	assert.Equal(t, r.Settings, got.Settings)
}

func testOversizeOnRead(t *testing.T, e sqlEnv) {
	s := e.open(t)
	create(t, s, newRun("huge0001", base()))
	e.exec(t, `UPDATE {runs} SET settings = $1 WHERE id = $2`, []byte(bigDocument()), "huge0001")

	_, err := s.Get(t.Context(), "huge0001")
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), `run "huge0001": its settings document has 16777217 bytes, over the limit of 16 MiB`)

	// Summaries do not read it.
	list, err := s.List(t.Context(), ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"huge0001"}, ids(list))
	require.NoError(t, s.Delete(t.Context(), "huge0001"))
}

func testCorruptOnRead(t *testing.T, e sqlEnv) {
	s := e.open(t)
	create(t, s, newRun("bad00001", base()))
	e.exec(t, `UPDATE {runs} SET report = $1 WHERE id = $2`, []byte(`{"answer":`), "bad00001")
	_, err := s.Get(t.Context(), "bad00001")
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), "report")
	assert.Contains(t, err.Error(), "research rm bad00001")
}

func testNewerSchema(t *testing.T, e sqlEnv) {
	e.open(t)
	e.exec(t, `UPDATE {meta} SET value = 2 WHERE key = 'schema_version'`)
	_, err := e.openErr(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has version 2, and this version of deepgraph reads up to 1: upgrade deepgraph")
}

func testConcurrentOpens(t *testing.T, e sqlEnv) {
	const openers = 8
	var wg sync.WaitGroup
	errs := make([]error, openers)
	for i := range openers {
		wg.Go(func() {
			s, err := e.openErr(t.Context())
			if err == nil {
				err = s.Create(t.Context(), newRun(fmt.Sprintf("open%04d", i), base()))
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	list, err := e.open(t).List(t.Context(), ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list, openers)
}

// SQLite: the tables live next to the checkpoint store's in its file.
func TestSQLiteSharesTheFile(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "store.db")
	db := openSQLiteDB(t, path)
	for _, stmt := range []string{
		`CREATE TABLE deepgraph_checkpoints (thread TEXT, id TEXT, data BLOB)`,
		`INSERT INTO deepgraph_checkpoints VALUES ('t', 'c1', x'7b7d')`,
		`PRAGMA user_version = 7`,
		`PRAGMA application_id = 1684500327`,
	} {
		_, err := db.ExecContext(ctx, stmt)
		require.NoError(t, err)
	}
	s, err := OpenSQLite(ctx, db)
	require.NoError(t, err)
	create(t, s, newRun("next0001", base()))
	require.NoError(t, db.Close())

	// Reopened from the file with another handle, everything is there.
	db = openSQLiteDB(t, path)
	s, err = OpenSQLite(ctx, db)
	require.NoError(t, err)
	got, err := s.Get(ctx, "next0001")
	require.NoError(t, err)
	assert.Equal(t, "why next0001?", got.Question)

	var n, userVersion, appID int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM deepgraph_checkpoints`).Scan(&n))
	require.NoError(t, db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&userVersion))
	require.NoError(t, db.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&appID))
	assert.Equal(t, 1, n)
	assert.Equal(t, 7, userVersion, "PRAGMA user_version belongs to the checkpoint store")
	assert.Equal(t, 1684500327, appID, "PRAGMA application_id belongs to the checkpoint store")

	var tables []string
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"deepgraph_checkpoints", "research_runs", "research_runs_meta"}, tables)
}

// PostgreSQL: the tables go in the connection's default schema (the first
// of its search_path), where the checkpoint store keeps its own.
func TestPostgresDefaultSchema(t *testing.T) {
	ctx := t.Context()
	pool, schema := newPostgresPool(t)
	s, err := OpenPostgres(ctx, pool)
	require.NoError(t, err)
	create(t, s, newRun("dflt0001", base()))

	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "research_runs"}.Sanitize()).Scan(&n))
	assert.Equal(t, 1, n)
}

// A database error is reported with the run and is no ErrNotFound.
func TestSQLiteErrors(t *testing.T) {
	ctx := t.Context()
	db := openSQLiteDB(t, filepath.Join(t.TempDir(), "runs.db"))
	s, err := OpenSQLite(ctx, db)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	r := newRun("gone0001", base())
	for name, err := range map[string]error{
		"create": s.Create(ctx, r),
		"update": s.Update(ctx, r),
		"delete": s.Delete(ctx, r.ID),
	} {
		require.ErrorContains(t, err, `run "gone0001"`, name)
		assert.ErrorContains(t, err, "SQLite: sql: database is closed", name)
		assert.NotErrorIs(t, err, ErrNotFound, name)
	}
	_, err = s.Get(ctx, "gone0001")
	require.ErrorContains(t, err, `reading run "gone0001" from SQLite: sql: database is closed`)
	assert.NotErrorIs(t, err, ErrNotFound)
	_, err = s.List(ctx, ListOptions{})
	assert.ErrorContains(t, err, "listing runs in SQLite: sql: database is closed")
	_, err = s.ThreadRuns(ctx, "t")
	assert.ErrorContains(t, err, `listing the runs of thread "t" in SQLite: sql: database is closed`)
	_, err = s.Prune(ctx, base())
	assert.ErrorContains(t, err, "listing the runs to prune in SQLite: sql: database is closed")
}

// SQLite: the real checkpoint store's file takes the tables, and the
// checkpoint store still opens it afterwards.
func TestSQLiteNextToCheckpoints(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "store.db")
	for i := range 2 {
		saver, err := checkpointsqlite.Open(ctx, path)
		require.NoError(t, err, "opening the checkpoint store, time %d", i+1)
		s, err := OpenSQLite(ctx, saver.DB())
		require.NoError(t, err)
		if i == 0 {
			create(t, s, newRun("ckpt0001", base()))
		} else {
			_, err := s.Get(ctx, "ckpt")
			assert.NoError(t, err)
		}
		require.NoError(t, saver.Close())
	}
}
