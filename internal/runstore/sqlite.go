package runstore

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"time"

	csqlite "github.com/deepgraph/deepgraph/graph/checkpoint/sqlite"
)

// OpenSQLite returns the Store in the SQLite database of db, a handle
// opened with github.com/ncruces/go-sqlite3 (driver "sqlite3"), as the
// checkpoint store's DB is, creating its tables
// research_runs, research_threads, research_run_calls and
// research_runs_meta if they are missing (or upgrading them). The database
// may hold other tables: it is meant to be the checkpoint store's. db should
// run in WAL mode with a busy timeout and _txlock=immediate, as the
// checkpoint store's handle does, so that processes sharing the file wait
// for each other instead of failing; the store's writes of several rows
// rely on that lock. The caller keeps db and closes it
// after the last use of the store.
func OpenSQLite(ctx context.Context, db *sql.DB) (Store, error) {
	return openSQL(ctx, newSQLiteDB(db), sqliteDialect())
}

// OpenSQLiteReadOnly returns the Store in the SQLite database of db for
// reading only — db opened read-only, as the checkpoint store's
// sqlite.OpenReadOnly does — without creating or upgrading its tables:
// List, Get, ThreadRuns, ListThreads and Call read them, and every
// write fails as SQLite refuses it. Tables that are missing, or of an older
// version that needs an upgrade, are refused with an error saying to open
// the store once where it can be written.
func OpenSQLiteReadOnly(ctx context.Context, db *sql.DB) (Store, error) {
	return openSQLReadOnly(ctx, newSQLiteDB(db), sqliteDialect())
}

// sqliteDialect is SQLite's SQL.
func sqliteDialect() dialect {
	return dialect{
		name: "SQLite",
		// Times are microseconds since the Unix epoch, NULL when unset;
		// Settings, Report and a call's data are BLOBs holding the JSON
		// verbatim.
		create: []string{
			`CREATE TABLE IF NOT EXISTS research_runs (
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
				report BLOB,
				cost_usd REAL
			) STRICT`,
			`CREATE INDEX IF NOT EXISTS research_runs_started ON research_runs (started DESC, id DESC)`,
			`CREATE INDEX IF NOT EXISTS research_runs_thread ON research_runs (thread, started, id)`,
			`CREATE TABLE IF NOT EXISTS research_threads (
				id TEXT PRIMARY KEY NOT NULL,
				kind TEXT NOT NULL,
				title TEXT NOT NULL,
				created INTEGER NOT NULL,
				updated INTEGER NOT NULL,
				data BLOB
			) STRICT`,
			`CREATE INDEX IF NOT EXISTS research_threads_updated ON research_threads (updated DESC, id DESC)`,
			`CREATE TABLE IF NOT EXISTS research_run_calls (
				run_id TEXT NOT NULL,
				key TEXT NOT NULL,
				at INTEGER,
				data BLOB NOT NULL,
				PRIMARY KEY (run_id, key)
			) STRICT`,
		},
		timeArg: func(t time.Time) any { return t.UnixMicro() },
		// Anonymous parameters, in order.
		param: func(int) string { return "?" },
		// No row locks (keyShare, forUpdate): a transaction holds the
		// database's write lock.
		runOfThread: `r.thread = t.id`,
		hasColumn:   `SELECT count(*) FROM pragma_table_info($1) WHERE name = $2`,
		added:       []addedColumn{{"research_runs", "cost_usd", "REAL"}, {"research_threads", "data", "BLOB"}},
		transient:   csqlite.Transient,
	}
}

// sqliteDB is a database/sql handle as a sqlDB.
//
// It runs at most maxSQLiteConns statements or transactions at once (conns):
// SQLite writes one transaction at a time anyway, and database/sql keeps
// two idle connections, closing the others as they come back — a burst of
// requests each writing a record (a server's many new threads) opened a
// connection each, and opening one (a SQLite instance in WebAssembly) cost
// more than the write.
type sqliteDB struct {
	stdConn
	db    *sql.DB
	conns chan struct{}
}

// maxSQLiteConns is the connections a store uses at once: as many as
// database/sql keeps idle by default.
const maxSQLiteConns = 2

func newSQLiteDB(db *sql.DB) sqliteDB {
	conns := make(chan struct{}, maxSQLiteConns)
	return sqliteDB{stdConn{r: db, stmts: &stmtCache{db: db}, conns: conns}, db, conns}
}

// inTx runs fn in a transaction (tx), whose lock serializes the creation
// of tables.
func (d sqliteDB) inTx(ctx context.Context, fn func(sqlConn) error) error {
	return d.begin(ctx, fn, false)
}

// tx runs fn in a transaction: with _txlock=immediate it takes the
// database's write lock at once.
func (d sqliteDB) tx(ctx context.Context, fn func(sqlConn) error) error {
	return d.begin(ctx, fn, true)
}

// begin runs fn in a transaction whose statements are prepared (prepare)
// or, in the one that may create the tables they name, run as they are
// unless they were prepared before.
func (d sqliteDB) begin(ctx context.Context, fn func(sqlConn) error, prepare bool) error {
	release, err := acquire(ctx, d.conns)
	if err != nil {
		return err
	}
	defer release()
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(stdConn{r: tx, tx: tx, stmts: d.stmts, prepare: prepare}); err != nil {
		return err
	}
	return tx.Commit()
}

// acquire takes one of conns (nil: no bound), waiting for one while
// ctx lasts, and returns what gives it back.
func acquire(ctx context.Context, conns chan struct{}) (func(), error) {
	if conns == nil {
		return func() {}, nil
	}
	select {
	case conns <- struct{}{}:
		return sync.OnceFunc(func() { <-conns }), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stdConn is a *sql.DB or a *sql.Tx on SQLite as a sqlConn. The statements
// are PostgreSQL's, numbering their parameters $1, $2…; SQLite reads $1 as
// a parameter named "$1" whose index is the order of first appearance, so
// stdConn writes them ?1, ?2…, whose index is the number.
//
// The statements are prepared once (stmts) and run again as prepared:
// SQLite parsed and planned a statement on each call otherwise, which took
// a good share of a write's CPU time.
type stdConn struct {
	r interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	}
	tx    *sql.Tx // r, when it is a transaction
	stmts *stmtCache
	// prepare says a transaction prepares the statements it runs (not
	// the one that creates the tables).
	prepare bool
	// conns bounds the statements run at once outside a transaction
	// (sqliteDB).
	conns chan struct{}
}

func (c stdConn) exec(ctx context.Context, query string, args ...any) (int64, error) {
	release, err := acquire(ctx, c.conns)
	if err != nil {
		return 0, err
	}
	defer release()
	var res sql.Result
	st, err := c.stmt(ctx, query)
	switch {
	case err != nil:
		return 0, err
	case st != nil:
		res, err = st.ExecContext(ctx, args...)
	default:
		res, err = c.r.ExecContext(ctx, numberedParams(query), args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c stdConn) query(ctx context.Context, query string, args ...any) (sqlRows, error) {
	release, err := acquire(ctx, c.conns)
	if err != nil {
		return nil, err
	}
	var rows *sql.Rows
	st, err := c.stmt(ctx, query)
	switch {
	case err != nil:
	case st != nil:
		rows, err = st.QueryContext(ctx, args...)
	default:
		rows, err = c.r.QueryContext(ctx, numberedParams(query), args...)
	}
	if err != nil {
		release()
		return nil, err
	}
	return stdRows{rows, release}, nil
}

// stmt is query prepared, for the transaction when c is one; nil when the
// cache is full (the query is then run as it is).
func (c stdConn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	switch {
	case c.stmts == nil:
		return nil, nil
	case c.tx != nil:
		// A transaction runs the statement as prepared on its connection
		// (prepared there now, the first time); the one that creates the
		// tables runs those it names as they are, unless prepared before.
		st := c.stmts.prepared(query)
		if st == nil && c.prepare {
			st = c.stmts.get(ctx, query)
		}
		if st == nil {
			return nil, nil
		}
		return c.tx.StmtContext(ctx, st), nil
	}
	return c.stmts.get(ctx, query), nil
}

// maxStmts bounds the statements a stmtCache keeps: the store's are fewer;
// those made for one call (a page of a list) beyond it are not kept.
const maxStmts = 64

// stmtCache holds the store's statements, prepared once each on the
// database (database/sql prepares them again on each connection that runs
// them, once).
type stmtCache struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// prepared is query's statement when it is prepared already.
func (c *stmtCache) prepared(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stmts[query]
}

// get is query's statement, prepared now if it was not; nil when it cannot
// be (the query then runs as it is, and says why it fails) or the cache is
// full.
func (c *stmtCache) get(ctx context.Context, query string) *sql.Stmt {
	c.mu.Lock()
	st, ok := c.stmts[query]
	full := len(c.stmts) >= maxStmts
	c.mu.Unlock()
	if ok || full {
		return st
	}
	// Prepared outside the lock (it may wait for a connection); of two
	// preparing one query at once, the first kept wins.
	st, err := c.db.PrepareContext(context.WithoutCancel(ctx), numberedParams(query))
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.stmts[query]; ok {
		_ = st.Close()
		return kept
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	c.stmts[query] = st
	return st
}

// numberedParams rewrites the parameters $N of query as ?N, leaving quoted
// text and names alone.
func numberedParams(query string) string {
	if !strings.Contains(query, "$") {
		return query
	}
	b := []byte(query)
	var quote byte
	for i, c := range b {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0 // a doubled quote closes and reopens: the same
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '$' && i+1 < len(b) && b[i+1] >= '0' && b[i+1] <= '9':
			b[i] = '?'
		}
	}
	return string(b)
}

// stdRows is *sql.Rows as sqlRows.
type stdRows struct {
	*sql.Rows
	release func() // gives back the connection's place (once)
}

// Close closes the rows. Errors reading them are reported by Err; one
// closing them after that changes nothing for the reader.
func (r stdRows) Close() {
	_ = r.Rows.Close()
	r.release()
}
