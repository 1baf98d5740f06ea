package runstore

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	cpostgres "github.com/deepgraph/deepgraph/graph/checkpoint/postgres"
)

// OpenPostgres returns the Store in the PostgreSQL database of pool, with
// its tables research_runs, research_threads, research_run_calls and
// research_runs_meta in the connection's
// default schema (the first of its search_path) — where the checkpoint
// store opened on the same pool keeps its tables. They are created (or
// upgraded) if they are missing, in a transaction holding an advisory lock, so that processes
// starting together do not race. The caller keeps pool and closes it after
// the last use of the store.
func OpenPostgres(ctx context.Context, pool *pgxpool.Pool) (Store, error) {
	return openSQL(ctx, pgDB{pgConn{pool}, pool}, dialect{
		name: "PostgreSQL",
		// Ids compare byte by byte (collation "C"), as in SQLite, which also
		// lets LIKE 'prefix%' use the primary key; thread ids too, so that
		// ListThreads orders them alike. Settings, Report and a call's
		// data are bytea holding the JSON verbatim: text that jsonb
		// refuses, like "\u0000", is kept, and invalid UTF-8 too.
		create: []string{
			`CREATE TABLE IF NOT EXISTS research_runs (
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
				report bytea,
				cost_usd double precision
			)`,
			`CREATE INDEX IF NOT EXISTS research_runs_started ON research_runs (started DESC, id DESC)`,
			`CREATE INDEX IF NOT EXISTS research_runs_thread ON research_runs (thread, started, id)`,
			`CREATE TABLE IF NOT EXISTS research_threads (
				id text COLLATE "C" PRIMARY KEY,
				kind text NOT NULL,
				title text NOT NULL,
				created timestamptz NOT NULL,
				updated timestamptz NOT NULL,
				data bytea
			)`,
			`CREATE INDEX IF NOT EXISTS research_threads_updated ON research_threads (updated DESC, id DESC)`,
			`CREATE TABLE IF NOT EXISTS research_run_calls (
				run_id text COLLATE "C" NOT NULL,
				key text COLLATE "C" NOT NULL,
				at timestamptz,
				data bytea NOT NULL,
				PRIMARY KEY (run_id, key)
			)`,
		},
		timeArg:   func(t time.Time) any { return t },
		param:     func(n int) string { return "$" + strconv.Itoa(n) },
		keyShare:  ` FOR KEY SHARE`,
		forUpdate: ` FOR UPDATE`,
		// research_runs.thread has the database's collation, thread ids
		// "C".
		runOfThread: `r.thread = t.id COLLATE "default"`,
		hasColumn: `SELECT count(*) FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2`,
		added:     []addedColumn{{"research_runs", "cost_usd", "double precision"}, {"research_threads", "data", "bytea"}},
		transient: cpostgres.Transient,
	})
}

// pgDB is a pool as a sqlDB.
type pgDB struct {
	pgConn
	pool *pgxpool.Pool
}

// inTx runs fn in a transaction holding an advisory lock on the tables of
// runs of the connection's schema.
func (d pgDB) inTx(ctx context.Context, fn func(sqlConn) error) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(
			'deepgraph research_runs in ' || coalesce(current_schema(), ''), 0))`); err != nil {
			return err
		}
		return fn(pgConn{tx})
	})
}

// tx runs fn in a transaction (read committed, unless the pool's
// connections default to another level).
func (d pgDB) tx(ctx context.Context, fn func(sqlConn) error) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error { return fn(pgConn{tx}) })
}

// pgConn is a pool or a transaction as a sqlConn; pgx.Rows is a sqlRows.
type pgConn struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	}
}

func (c pgConn) exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := c.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (c pgConn) query(ctx context.Context, query string, args ...any) (sqlRows, error) {
	return c.q.Query(ctx, query, args...)
}
