package runstore

import (
	"context"
	"database/sql"
	"strings"
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
	return openSQL(ctx, sqliteDB{stdConn{db}, db}, sqliteDialect())
}

// OpenSQLiteReadOnly returns the Store in the SQLite database of db for
// reading only — db opened read-only, as the checkpoint store's
// sqlite.OpenReadOnly does — without creating or upgrading its tables:
// List, Get, ThreadRuns, ListThreads and Call read them, and every
// write fails as SQLite refuses it. Tables that are missing, or of an older
// version that needs an upgrade, are refused with an error saying to open
// the store once where it can be written.
func OpenSQLiteReadOnly(ctx context.Context, db *sql.DB) (Store, error) {
	return openSQLReadOnly(ctx, sqliteDB{stdConn{db}, db}, sqliteDialect())
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
type sqliteDB struct {
	stdConn
	db *sql.DB
}

// inTx runs fn in a transaction (tx), whose lock serializes the creation
// of tables.
func (d sqliteDB) inTx(ctx context.Context, fn func(sqlConn) error) error {
	return d.tx(ctx, fn)
}

// tx runs fn in a transaction: with _txlock=immediate it takes the
// database's write lock at once.
func (d sqliteDB) tx(ctx context.Context, fn func(sqlConn) error) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(stdConn{tx}); err != nil {
		return err
	}
	return tx.Commit()
}

// stdConn is a *sql.DB or a *sql.Tx on SQLite as a sqlConn. The statements
// are PostgreSQL's, numbering their parameters $1, $2…; SQLite reads $1 as
// a parameter named "$1" whose index is the order of first appearance, so
// stdConn writes them ?1, ?2…, whose index is the number.
type stdConn struct {
	r interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	}
}

func (c stdConn) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.r.ExecContext(ctx, numberedParams(query), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c stdConn) query(ctx context.Context, query string, args ...any) (sqlRows, error) {
	rows, err := c.r.QueryContext(ctx, numberedParams(query), args...)
	if err != nil {
		return nil, err
	}
	return stdRows{rows}, nil
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
type stdRows struct{ *sql.Rows }

// Close closes the rows. Errors reading them are reported by Err; one
// closing them after that changes nothing for the reader.
func (r stdRows) Close() { _ = r.Rows.Close() }
