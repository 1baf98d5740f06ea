package runstore

import (
	"context"
	"database/sql"
	"time"
)

// OpenSQLite returns the Store in the SQLite database of db, a handle
// opened with modernc.org/sqlite (driver "sqlite"), creating its tables
// research_runs and research_runs_meta if they are missing. The database
// may hold other tables: it is meant to be the checkpoint store's. db should
// run in WAL mode with a busy timeout and _txlock=immediate, as the
// checkpoint store's handle does, so that processes sharing the file wait
// for each other instead of failing. The caller keeps db and closes it
// after the last use of the store.
func OpenSQLite(ctx context.Context, db *sql.DB) (Store, error) {
	return openSQL(ctx, sqliteDB{stdConn{db}, db}, dialect{
		name: "SQLite",
		// Times are microseconds since the Unix epoch, NULL when unset;
		// Settings and Report are BLOBs holding the JSON verbatim.
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
				report BLOB
			) STRICT`,
			`CREATE INDEX IF NOT EXISTS research_runs_started ON research_runs (started DESC, id DESC)`,
			`CREATE INDEX IF NOT EXISTS research_runs_thread ON research_runs (thread, started, id)`,
		},
		timeArg: func(t time.Time) any { return t.UnixMicro() },
	})
}

// sqliteDB is a database/sql handle as a sqlDB.
type sqliteDB struct {
	stdConn
	db *sql.DB
}

// inTx runs fn in a transaction: with _txlock=immediate it takes the
// database's write lock at once, which serializes the creation of tables.
func (d sqliteDB) inTx(ctx context.Context, fn func(sqlConn) error) error {
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

// stdConn is a *sql.DB or a *sql.Tx as a sqlConn.
type stdConn struct {
	r interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	}
}

func (c stdConn) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.r.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c stdConn) query(ctx context.Context, query string, args ...any) (sqlRows, error) {
	rows, err := c.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return stdRows{rows}, nil
}

// stdRows is *sql.Rows as sqlRows.
type stdRows struct{ *sql.Rows }

// Close closes the rows. Errors reading them are reported by Err; one
// closing them after that changes nothing for the reader.
func (r stdRows) Close() { _ = r.Rows.Close() }
