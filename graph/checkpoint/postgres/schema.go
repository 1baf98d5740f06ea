package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// migrations are the versions of the tables in order: migrations()[v] takes
// them from version v to v+1. Add to the end, never change what is there.
func migrations() []string {
	return []string{
		`CREATE TABLE deepgraph_schema (version integer NOT NULL);
		INSERT INTO deepgraph_schema (version) VALUES (0);
		CREATE TABLE deepgraph_threads (
			thread text PRIMARY KEY,
			newest text NOT NULL DEFAULT ''
		);
		CREATE TABLE deepgraph_checkpoints (
			thread  text NOT NULL REFERENCES deepgraph_threads ON DELETE CASCADE,
			id      text NOT NULL,
			seq     bigint GENERATED ALWAYS AS IDENTITY,
			parent  text NOT NULL,
			step    integer NOT NULL,
			created timestamptz NOT NULL,
			source  text NOT NULL,
			data    bytea NOT NULL,
			PRIMARY KEY (thread, id)
		);
		CREATE INDEX ON deepgraph_checkpoints (thread, seq);
		CREATE TABLE deepgraph_writes (
			thread     text NOT NULL,
			checkpoint text NOT NULL,
			task       integer NOT NULL CHECK (task >= 0),
			data       bytea NOT NULL,
			PRIMARY KEY (thread, checkpoint, task)
		);`,
	}
}

// statements are the SQL of a Saver, with its schema's table names.
type statements struct {
	qualify func(string) string

	createThread, lockThread, parentExists, insert string
	putWrites, get, list, deleteThread             string
	version, setVersion                            string
}

// newStatements returns the SQL of a Saver whose tables are in schema (the
// search path's when it is empty): the SQL names them deepgraph_*, and
// qualify puts the schema in front.
func newStatements(schema string) statements {
	qualify := func(s string) string { return s }
	if schema != "" {
		qualify = strings.NewReplacer("deepgraph_", pgx.Identifier{schema}.Sanitize()+".deepgraph_").Replace
	}
	return statements{
		qualify:      qualify,
		createThread: qualify(`INSERT INTO deepgraph_threads (thread) VALUES ($1) ON CONFLICT DO NOTHING`),
		lockThread:   qualify(`SELECT newest FROM deepgraph_threads WHERE thread = $1 FOR UPDATE`),
		parentExists: qualify(`SELECT EXISTS (SELECT FROM deepgraph_checkpoints WHERE thread = $1 AND id = $2)`),
		// Inserts the checkpoint and makes it the newest; affects no row
		// when the thread has the id already.
		insert: qualify(`WITH stored AS (
			INSERT INTO deepgraph_checkpoints (thread, id, parent, step, created, source, data)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (thread, id) DO NOTHING
			RETURNING id)
		UPDATE deepgraph_threads t SET newest = stored.id FROM stored WHERE t.thread = $1`),
		putWrites: qualify(`INSERT INTO deepgraph_writes (thread, checkpoint, task, data)
			SELECT $1, $2, r.task, r.data FROM unnest($3::integer[], $4::bytea[]) AS r(task, data)
			ON CONFLICT (thread, checkpoint, task) DO UPDATE SET data = excluded.data`),
		// The checkpoint ($2, or the newest when $2 is empty) as task -1, then
		// its task records in task order; documents over $3 bytes are left
		// out, their sizes kept.
		get: qualify(`WITH cp AS (
			SELECT id, data FROM deepgraph_checkpoints
			WHERE thread = $1 AND id = CASE WHEN $2 = '' THEN (SELECT newest FROM deepgraph_threads WHERE thread = $1) ELSE $2 END)
		SELECT -1 AS task, id, octet_length(data), CASE WHEN octet_length(data) <= $3::bigint THEN data END FROM cp
		UNION ALL
		SELECT task, checkpoint, octet_length(data), CASE WHEN octet_length(data) <= $3::bigint THEN data END
		FROM deepgraph_writes WHERE thread = $1 AND checkpoint = (SELECT id FROM cp)
		ORDER BY task`),
		// Newest first, at most $2 (all when NULL).
		list: qualify(`SELECT id, octet_length(data), CASE WHEN octet_length(data) <= $3::bigint THEN data END
		FROM deepgraph_checkpoints WHERE thread = $1 ORDER BY seq DESC LIMIT $2`),
		// The thread's checkpoints go with its row.
		deleteThread: qualify(`WITH records AS (DELETE FROM deepgraph_writes WHERE thread = $1)
		DELETE FROM deepgraph_threads WHERE thread = $1`),
		version:    qualify(`SELECT max(version) FROM deepgraph_schema`),
		setVersion: qualify(`UPDATE deepgraph_schema SET version = $1`),
	}
}

// migrationLock serialises the migrations of one schema ($1, or the
// current one when $1 is empty) across processes until the transaction ends.
const migrationLock = `SELECT pg_advisory_xact_lock(hashtextextended('deepgraph migrations ' || coalesce(nullif($1, ''), current_schema(), ''), 0))`

// migrate brings the tables up to the newest version, creating the schema
// when it is missing.
func (s *Saver) migrate(ctx context.Context, schema string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, migrationLock, schema); err != nil {
			return err
		}
		if schema != "" {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				if _, err := tx.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
					return err
				}
			}
		}
		version := 0
		var present bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.sql.qualify("deepgraph_schema")).Scan(&present); err != nil {
			return err
		}
		if present {
			if err := tx.QueryRow(ctx, s.sql.version).Scan(&version); err != nil {
				return err
			}
		}
		steps := migrations()
		if version > len(steps) {
			return fmt.Errorf("the tables are at version %d, and this version of deepgraph knows versions up to %d: a newer deepgraph made them; upgrade deepgraph to use them", version, len(steps))
		}
		if version == len(steps) {
			return nil
		}
		for _, step := range steps[version:] {
			if _, err := tx.Exec(ctx, s.sql.qualify(step)); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, s.sql.setVersion, len(steps))
		return err
	})
}
