package runstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// OpenPostgres returns the Store in the PostgreSQL database of pool, with
// its tables research_runs and research_runs_meta in schema — created when
// missing — or, when schema is "", in the connection's default schema (the
// first of its search_path). They are created if they are missing, in a
// transaction holding an advisory lock, so that processes starting together
// do not race. The caller keeps pool and closes it after the last use of the
// store.
func OpenPostgres(ctx context.Context, pool *pgxpool.Pool, schema string) (Store, error) {
	runs, meta := "research_runs", "research_runs_meta"
	if schema != "" {
		runs, meta = pgx.Identifier{schema, runs}.Sanitize(), pgx.Identifier{schema, meta}.Sanitize()
	}
	return openSQL(ctx, pgDB{pgConn{pool}, pool, schema}, dialect{
		name: "PostgreSQL",
		runs: runs,
		meta: meta,
		// Ids compare byte by byte (collation "C"), as in SQLite, which also
		// lets LIKE 'prefix%' use the primary key. Settings and Report are
		// bytea holding the JSON verbatim: text that jsonb refuses, like
		// "\u0000", is kept, and invalid UTF-8 too.
		create: []string{
			`CREATE TABLE IF NOT EXISTS {runs} (
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
			`CREATE INDEX IF NOT EXISTS research_runs_started ON {runs} (started DESC, id DESC)`,
			`CREATE INDEX IF NOT EXISTS research_runs_thread ON {runs} (thread, started, id)`,
		},
		timeArg: func(t time.Time) any { return t },
	})
}

// pgDB is a pool as a sqlDB.
type pgDB struct {
	pgConn
	pool   *pgxpool.Pool
	schema string
}

// inTx runs fn in a transaction holding an advisory lock on the schema's
// tables of runs, after creating the schema if it is missing.
func (d pgDB) inTx(ctx context.Context, fn func(sqlConn) error) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(
			'deepgraph research_runs in ' || coalesce(nullif($1, ''), current_schema(), ''), 0))`, d.schema); err != nil {
			return err
		}
		if d.schema != "" {
			var found bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, d.schema).Scan(&found); err != nil {
				return err
			}
			// Only when missing: CREATE SCHEMA IF NOT EXISTS needs the
			// privilege to create schemas even when it exists.
			if !found {
				if _, err := tx.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{d.schema}.Sanitize()); err != nil {
					return err
				}
			}
		}
		return fn(pgConn{tx})
	})
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
