package runstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/ncruces/go-sqlite3/driver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	checkpointsqlite "github.com/deepgraph/deepgraph/graph/checkpoint/sqlite"
)

// sqlEnv is a database for the tests of a SQL store.
type sqlEnv struct {
	// openErr opens the store (again) over the database.
	openErr func(ctx context.Context) (Store, error)
	// exec runs a statement behind the store's back; {runs}, {meta},
	// {threads} and {events} stand for its tables.
	exec func(t *testing.T, query string, args ...any)
	// v1 are the statements that made the tables of schema version 1 (in
	// an empty database, with exec).
	v1 []string
	// v2 are the statements that made tables of version 1 into those of
	// schema version 2 (after v1).
	v2 []string
	// tables lists the tables of the store's database.
	tables func(t *testing.T) []string
	// time is a time as the tables store it, for exec.
	time func(time.Time) any
	// count runs a query behind the store's back that counts something.
	count func(t *testing.T, query string, args ...any) int
}

func (e sqlEnv) open(t *testing.T) Store {
	t.Helper()
	s, err := e.openErr(t.Context())
	require.NoError(t, err)
	return s
}

// sqliteDSN is the data source name of a SQLite file as the checkpoint
// store opens it: WAL mode is not among its pragmas, as it is not in the
// store's, since setting it takes the file's exclusive lock, which
// connections opening at once would fail to get (SQLite does not wait for
// it); it is set once, and the file keeps it.
func sqliteDSN(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_txlock=immediate"
}

// openSQLiteDB opens a database/sql handle to the SQLite file, in WAL mode,
// closed in cleanup.
func openSQLiteDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := driver.Open(sqliteDSN(path))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.Exec(`PRAGMA journal_mode = WAL`)
	require.NoError(t, err)
	return db
}

// newSQLite is a fresh SQLite file in t.TempDir().
func newSQLite(t testing.TB) sqlEnv {
	db := openSQLiteDB(t, filepath.Join(t.TempDir(), "runs.db"))
	names := strings.NewReplacer("{runs}", "research_runs", "{meta}", "research_runs_meta",
		"{threads}", "research_threads", "{events}", "research_run_events", "{calls}", "research_run_calls")
	return sqlEnv{
		openErr: func(ctx context.Context) (Store, error) { return OpenSQLite(ctx, db) },
		exec: func(t *testing.T, query string, args ...any) {
			_, err := db.ExecContext(t.Context(), names.Replace(query), args...)
			require.NoError(t, err)
		},
		v1: []string{
			`CREATE TABLE research_runs_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL)`,
			`CREATE TABLE research_runs (
				id TEXT PRIMARY KEY NOT NULL,
				thread TEXT NOT NULL,
				kind TEXT NOT NULL,
				question TEXT NOT NULL,
				status TEXT NOT NULL,
				started INTEGER NOT NULL,
				updated INTEGER,
				ended INTEGER,
				error TEXT NOT NULL,
				tokens INTEGER NOT NULL,
				calls INTEGER NOT NULL,
				host TEXT NOT NULL,
				pid INTEGER NOT NULL,
				settings BLOB,
				report BLOB
			) STRICT`,
			`CREATE INDEX research_runs_started ON research_runs (started DESC, id DESC)`,
			`CREATE INDEX research_runs_thread ON research_runs (thread, started, id)`,
			`INSERT INTO research_runs_meta (key, value) VALUES ('schema_version', 1)`,
		},
		v2: []string{
			`CREATE TABLE research_threads (
				id TEXT PRIMARY KEY NOT NULL,
				kind TEXT NOT NULL,
				title TEXT NOT NULL,
				created INTEGER NOT NULL,
				updated INTEGER NOT NULL
			) STRICT`,
			`CREATE INDEX research_threads_updated ON research_threads (updated DESC, id DESC)`,
			`CREATE TABLE research_run_events (
				run_id TEXT NOT NULL,
				seq INTEGER NOT NULL,
				type TEXT NOT NULL,
				at INTEGER,
				data BLOB NOT NULL,
				PRIMARY KEY (run_id, seq)
			) STRICT`,
			`CREATE INDEX research_run_events_type ON research_run_events (run_id, type, seq)`,
			`UPDATE research_runs_meta SET value = 2 WHERE key = 'schema_version'`,
		},
		tables: func(t *testing.T) []string {
			return queryStrings(t, db, `SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
		},
		time: func(t time.Time) any { return t.UnixMicro() },
		count: func(t *testing.T, query string, args ...any) int {
			var n int
			require.NoError(t, db.QueryRowContext(t.Context(), names.Replace(query), args...).Scan(&n))
			return n
		},
	}
}

// queryStrings returns the first column of a query's rows.
func queryStrings(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), query)
	require.NoError(t, err)
	defer rows.Close()
	var all []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		all = append(all, s)
	}
	require.NoError(t, rows.Err())
	return all
}

// postgresDSN returns the DSN of the test server, or skips the test.
func postgresDSN(t testing.TB) string {
	dsn := os.Getenv("DEEPGRAPH_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("PostgreSQL tests skipped: set DEEPGRAPH_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run them (.ci/run sets it when a server answers on 127.0.0.1:5432)")
	}
	return dsn
}

// newPostgres is a fresh schema of its own, first in the pool's
// search_path, dropped in cleanup.
func newPostgres(t testing.TB) sqlEnv {
	pool, schema := newPostgresPool(t)
	names := strings.NewReplacer("{runs}", pgx.Identifier{schema, "research_runs"}.Sanitize(),
		"{meta}", pgx.Identifier{schema, "research_runs_meta"}.Sanitize(),
		"{threads}", pgx.Identifier{schema, "research_threads"}.Sanitize(),
		"{events}", pgx.Identifier{schema, "research_run_events"}.Sanitize(),
		"{calls}", pgx.Identifier{schema, "research_run_calls"}.Sanitize())
	return sqlEnv{
		openErr: func(ctx context.Context) (Store, error) { return OpenPostgres(ctx, pool) },
		exec: func(t *testing.T, query string, args ...any) {
			_, err := pool.Exec(t.Context(), names.Replace(query), args...)
			require.NoError(t, err)
		},
		v1: []string{
			`CREATE TABLE {meta} (key TEXT PRIMARY KEY, value BIGINT NOT NULL)`,
			`CREATE TABLE {runs} (
				id text COLLATE "C" PRIMARY KEY,
				thread text NOT NULL,
				kind text NOT NULL,
				question text NOT NULL,
				status text NOT NULL,
				started timestamptz NOT NULL,
				updated timestamptz,
				ended timestamptz,
				error text NOT NULL,
				tokens bigint NOT NULL,
				calls bigint NOT NULL,
				host text NOT NULL,
				pid bigint NOT NULL,
				settings bytea,
				report bytea
			)`,
			`CREATE INDEX research_runs_started ON {runs} (started DESC, id DESC)`,
			`CREATE INDEX research_runs_thread ON {runs} (thread, started, id)`,
			`INSERT INTO {meta} (key, value) VALUES ('schema_version', 1)`,
		},
		v2: []string{
			`CREATE TABLE {threads} (
				id text COLLATE "C" PRIMARY KEY,
				kind text NOT NULL,
				title text NOT NULL,
				created timestamptz NOT NULL,
				updated timestamptz NOT NULL
			)`,
			`CREATE INDEX research_threads_updated ON {threads} (updated DESC, id DESC)`,
			`CREATE TABLE {events} (
				run_id text COLLATE "C" NOT NULL,
				seq bigint NOT NULL,
				type text NOT NULL,
				at timestamptz,
				data bytea NOT NULL,
				PRIMARY KEY (run_id, seq)
			)`,
			`CREATE INDEX research_run_events_type ON {events} (run_id, type, seq)`,
			`UPDATE {meta} SET value = 2 WHERE key = 'schema_version'`,
		},
		tables: func(t *testing.T) []string {
			rows, err := pool.Query(t.Context(), `SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename COLLATE "C"`, schema)
			require.NoError(t, err)
			names, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			return names
		},
		time: func(t time.Time) any { return t },
		count: func(t *testing.T, query string, args ...any) int {
			var n int
			require.NoError(t, pool.QueryRow(t.Context(), names.Replace(query), args...).Scan(&n))
			return n
		},
	}
}

// newPostgresPool connects to the test server with a fresh schema of its
// own first in search_path, and returns the pool and the schema's name; the
// schema is dropped in cleanup.
func newPostgresPool(t testing.TB) (*pgxpool.Pool, string) {
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

func testSQL(t *testing.T, env func(testing.TB) sqlEnv) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e sqlEnv)
	}{
		{"ReopenKeepsRuns", testReopen},
		{"OversizeDocumentRefusedOnRead", testOversizeOnRead},
		{"CorruptDocumentRefusedOnRead", testCorruptOnRead},
		{"NewerSchemaRefused", testNewerSchema},
		{"ConcurrentOpens", testConcurrentOpens},
		{"Tables", testTables},
		{"UpgradeFromVersion1", testUpgradeFromV1},
		{"UpgradeEmptyVersion1", testUpgradeEmptyV1},
		{"UpgradeFromVersion2", testUpgradeFromV2},
		{"UpgradeFromVersion1Cost", testUpgradeFromV1Cost},
		{"NoCallsOutliveTheirRun", testNoOrphanCalls},
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
	e.exec(t, `UPDATE {meta} SET value = 6 WHERE key = 'schema_version'`)
	_, err := e.openErr(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has version 6, and this version of deepgraph reads up to 5: upgrade deepgraph")
}

func testTables(t *testing.T, e sqlEnv) {
	e.open(t)
	assert.Equal(t, []string{"research_run_calls", "research_runs", "research_runs_meta", "research_threads"}, e.tables(t))
}

// testUpgradeFromV1 opens tables of schema version 1 with runs: the new
// tables are made, and each thread gets its row.
func testUpgradeFromV1(t *testing.T, e sqlEnv) {
	ctx := t.Context()
	for _, stmt := range e.v1 {
		e.exec(t, stmt)
	}
	insert := func(id, thread string, kind Kind, question string, started time.Time) {
		e.exec(t, `INSERT INTO {runs} (id, thread, kind, question, status, started, updated, ended, error, tokens, calls, host, pid)
			VALUES ($1, $2, $3, $4, 'done', $5, NULL, NULL, '', 0, 0, '', 0)`, id, thread, string(kind), question, e.time(started))
	}
	insert("old00001", "conversation", KindAgent, "first", base())
	insert("old00002", "conversation", KindResearch, "second", base().Add(2*time.Hour))
	insert("old00003", "conversation", KindResearch, "same start, greater id", base())
	insert("old00004", "conversation", KindResearch, "between", base().Add(time.Hour))
	insert("old00005", "lonely", KindResearch, "alone", base().Add(3*time.Hour))
	insert("old00000", "tie", KindResearch, "tie, smaller id", base())
	insert("old00009", "tie", KindAgent, "tie, greater id", base())

	s := e.open(t)
	assert.Equal(t, []string{"research_run_calls", "research_runs", "research_runs_meta", "research_threads"}, e.tables(t))
	threads, err := s.ListThreads(ctx, ThreadListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []*Thread{
		{ID: "lonely", Kind: KindResearch, Title: "alone", Created: base().Add(3 * time.Hour), Updated: base().Add(3 * time.Hour), Runs: 1},
		{ID: "conversation", Kind: KindAgent, Title: "first", Created: base(), Updated: base().Add(2 * time.Hour), Runs: 4},
		{ID: "tie", Kind: KindResearch, Title: "tie, smaller id", Created: base(), Updated: base(), Runs: 2},
	}, threads)

	// The upgraded store works, and opens again without redoing it.
	r := newRun("new00001", base().Add(5*time.Hour))
	r.Thread = "conversation"
	create(t, s, r)
	require.NoError(t, s.RecordCall(ctx, r.ID, "search:a", []byte(`{}`)))
	require.NoError(t, s.DeleteThread(ctx, "lonely"))
	s = e.open(t)
	th, err := s.GetThread(ctx, "conversation")
	require.NoError(t, err)
	assert.Equal(t, base().Add(5*time.Hour), th.Updated)
	assert.Equal(t, 5, th.Runs)
	_, err = s.GetThread(ctx, "lonely")
	require.ErrorIs(t, err, ErrNotFound, "not made again")
	_, err = s.Call(ctx, r.ID, "search:a")
	require.NoError(t, err)
}

// testNoOrphanCalls deletes runs while writers record calls of theirs:
// no call stays behind, and a record fails only because the run is gone.
func testNoOrphanCalls(t *testing.T, e sqlEnv) {
	s := e.open(t)
	const runs, writers = 4, 4
	for i := range runs {
		r := newRun(fmt.Sprintf("orph%04d", i), base())
		if i%2 == 1 {
			r.Thread = "thread-orph0000" // DeleteThread removes both
		}
		create(t, s, r)
	}
	var wg sync.WaitGroup
	errs := make(chan error, runs*writers+runs)
	for i := range runs {
		id := fmt.Sprintf("orph%04d", i)
		for w := range writers {
			wg.Go(func() {
				for n := 0; ; n++ {
					err := s.RecordCall(t.Context(), id, fmt.Sprintf("search:%d:%d", w, n), []byte(`{}`))
					if err != nil {
						if !errors.Is(err, ErrNotFound) {
							errs <- err
						}
						return
					}
				}
			})
		}
	}
	time.Sleep(20 * time.Millisecond)
	errs <- s.DeleteThread(t.Context(), "thread-orph0000")
	errs <- s.Delete(t.Context(), "orph0002")
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Zero(t, e.count(t, `SELECT count(*) FROM {calls}`), "calls of deleted runs")
	assert.Zero(t, e.count(t, `SELECT count(*) FROM {runs}`))
}

// testUpgradeFromV2 opens tables of schema version 2 with a run, its
// thread and its events: the run gets an unknown cost, keeps the rest, and
// costs are stored from then on, also after opening again.
func testUpgradeFromV2(t *testing.T, e sqlEnv) {
	ctx := t.Context()
	for _, stmt := range append(slices.Clone(e.v1), e.v2...) {
		e.exec(t, stmt)
	}
	e.exec(t, `INSERT INTO {runs} (id, thread, kind, question, status, started, updated, ended, error, tokens, calls, host, pid)
		VALUES ('old00001', 'talk', 'research', 'before costs', 'done', $1, NULL, NULL, '', 1234, 5, '', 0)`, e.time(base()))
	e.exec(t, `INSERT INTO {threads} (id, kind, title, created, updated) VALUES ('talk', 'research', 'before costs', $1, $1)`, e.time(base()))
	e.exec(t, `INSERT INTO {events} (run_id, seq, type, at, data) VALUES ('old00001', 1, 'end', NULL, $1)`, []byte(`{}`))

	s := e.open(t)
	assert.Equal(t, 5, e.count(t, `SELECT value FROM {meta} WHERE key = 'schema_version'`))
	old, err := s.Get(ctx, "old00001")
	require.NoError(t, err)
	assert.Nil(t, old.Cost, "a run stored before costs has an unknown one, never 0")
	assert.Equal(t, int64(1234), old.Tokens)
	assert.Equal(t, 5, old.Calls)
	assert.NotContains(t, e.tables(t), "research_run_events", "the event log is gone since version 5")
	th, err := s.GetThread(ctx, "talk")
	require.NoError(t, err)
	assert.Equal(t, 1, th.Runs)
	assert.Nil(t, th.Data, "a thread stored before version 5 has no data")
	require.NoError(t, s.SetThreadData(ctx, "talk", json.RawMessage(`{"kept":true}`)), "and can get some")

	old.Cost = new(0.0042)
	require.NoError(t, s.Update(ctx, old))
	r := newRun("new00001", base().Add(time.Hour))
	r.Cost = new(1.5)
	create(t, s, r)

	s = e.open(t) // again: nothing to upgrade
	th, err = s.GetThread(ctx, "talk")
	require.NoError(t, err)
	assert.JSONEq(t, `{"kept":true}`, string(th.Data))
	runs, err := s.List(ctx, ListOptions{})
	require.NoError(t, err)
	require.Len(t, runs, 2)
	require.NotNil(t, runs[0].Cost)
	require.NotNil(t, runs[1].Cost)
	assert.Equal(t, 1.5, *runs[0].Cost)
	assert.Equal(t, 0.0042, *runs[1].Cost)
}

// testUpgradeFromV1Cost upgrades tables of version 1 by two versions at
// once: the runs get an unknown cost.
func testUpgradeFromV1Cost(t *testing.T, e sqlEnv) {
	for _, stmt := range e.v1 {
		e.exec(t, stmt)
	}
	e.exec(t, `INSERT INTO {runs} (id, thread, kind, question, status, started, updated, ended, error, tokens, calls, host, pid)
		VALUES ('old00001', 'talk', 'agent', 'old', 'done', $1, NULL, NULL, '', 0, 0, '', 0)`, e.time(base()))
	s := e.open(t)
	got, err := s.Get(t.Context(), "old00001")
	require.NoError(t, err)
	assert.Nil(t, got.Cost)
	got.Cost = new(0.25)
	require.NoError(t, s.Update(t.Context(), got))
	got, err = e.open(t).Get(t.Context(), "old00001")
	require.NoError(t, err)
	require.NotNil(t, got.Cost)
	assert.Equal(t, 0.25, *got.Cost)
}

func testUpgradeEmptyV1(t *testing.T, e sqlEnv) {
	for _, stmt := range e.v1 {
		e.exec(t, stmt)
	}
	s := e.open(t)
	threads, err := s.ListThreads(t.Context(), ThreadListOptions{})
	require.NoError(t, err)
	assert.Empty(t, threads)
	create(t, s, newRun("new00001", base()))
	threads, err = s.ListThreads(t.Context(), ThreadListOptions{})
	require.NoError(t, err)
	assert.Len(t, threads, 1)
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

	assert.Equal(t, []string{"deepgraph_checkpoints", "research_run_calls", "research_runs", "research_runs_meta", "research_threads"},
		queryStrings(t, db, `SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`))
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

	th := &Thread{ID: "thread1", Created: base()}
	assert.ErrorContains(t, s.CreateThread(ctx, th), `storing new thread "thread1" in SQLite: sql: database is closed`)
	_, err = s.GetThread(ctx, th.ID)
	assert.ErrorContains(t, err, `reading thread "thread1" from SQLite: sql: database is closed`)
	assert.NotErrorIs(t, err, ErrNotFound)
	_, err = s.ListThreads(ctx, ThreadListOptions{})
	assert.ErrorContains(t, err, "listing threads in SQLite: sql: database is closed")
	err = s.DeleteThread(ctx, th.ID)
	assert.ErrorContains(t, err, `deleting thread "thread1" from SQLite: sql: database is closed`)
	assert.NotErrorIs(t, err, ErrNotFound)
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

func TestNumberedParams(t *testing.T) {
	for in, want := range map[string]string{
		`SELECT 1`: `SELECT 1`,
		`SELECT a FROM t WHERE b <= $2 AND id = $1`:           `SELECT a FROM t WHERE b <= ?2 AND id = ?1`,
		`SELECT '$1', "c$2", $10 FROM t WHERE x = 'it''s $3'`: `SELECT '$1', "c$2", ?10 FROM t WHERE x = 'it''s $3'`,
		`SELECT json_extract(d, '$.a') FROM t WHERE $ = $1`:   `SELECT json_extract(d, '$.a') FROM t WHERE $ = ?1`,
	} {
		assert.Equal(t, want, numberedParams(in), in)
	}
}
