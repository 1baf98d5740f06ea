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
		// Version 2: namespaces (a subgraph's line of checkpoints), the run
		// that wrote each checkpoint and the versions of its channels; the
		// channel values, stored once per version and shared by the
		// checkpoints that did not change them; the threads' leases. A
		// checkpoint id stays unique within its thread, so the keys are
		// those of version 1, whose checkpoints are read as they are.
		`ALTER TABLE deepgraph_checkpoints
			ADD COLUMN ns text NOT NULL DEFAULT '',
			ADD COLUMN run text NOT NULL DEFAULT '',
			ADD COLUMN channels text[] NOT NULL DEFAULT '{}',
			ADD COLUMN versions text[] NOT NULL DEFAULT '{}';
		DROP INDEX IF EXISTS deepgraph_checkpoints_thread_seq_idx;
		CREATE INDEX ON deepgraph_checkpoints (thread, ns, seq);
		CREATE TABLE deepgraph_blobs (
			thread  text NOT NULL REFERENCES deepgraph_threads ON DELETE CASCADE,
			channel text NOT NULL,
			version text NOT NULL,
			ns      text NOT NULL,
			data    bytea NOT NULL,
			PRIMARY KEY (thread, channel, version)
		);
		ALTER TABLE deepgraph_threads
			ADD COLUMN lease_run text NOT NULL DEFAULT '',
			ADD COLUMN lease_until timestamptz NOT NULL DEFAULT 'epoch',
			ADD COLUMN lease_stop boolean NOT NULL DEFAULT false;`,
	}
}

// statements are the SQL of a Saver, with its schema's table names.
type statements struct {
	qualify func(string) string

	createThread, lockThread, newest, parentExists, insert, insertBlobs, insertWrites string
	putWrites, writeCheck, getNewest, getByID, seq, list, listParts                   string
	lockForDelete, deleteThread, pruneList, pruneDelete, pruneBlobs                   string
	takeLease, releaseLease, stopLease, storedBytes                                   string
	version, setVersion                                                               string
}

// docSQL selects a document's size, and the document when it is within $n
// bytes.
func docSQL(column, limit string) string {
	return `octet_length(` + column + `), CASE WHEN octet_length(` + column + `) <= ` + limit + `::bigint THEN ` + column + ` END`
}

// getSQL reads the checkpoint cte selects (columns id, data, channels,
// versions; at most one row), then its channel values and its task records:
// rows of (task, id, channel, size, data), the checkpoint as task -2, each
// value as task -1 with its version as id, the records in task order.
func getSQL(cte string) string {
	return `WITH cp AS (` + cte + `)
		SELECT -2 AS task, id, '' AS channel, ` + docSQL("data", "$4") + ` FROM cp
		UNION ALL
		SELECT -1, b.version, b.channel, ` + docSQL("b.data", "$4") + `
		FROM cp CROSS JOIN LATERAL unnest(cp.channels, cp.versions) AS v(channel, version)
		JOIN deepgraph_blobs b ON b.thread = $1 AND b.channel = v.channel AND b.version = v.version
		UNION ALL
		SELECT task, checkpoint, '', ` + docSQL("data", "$4") + `
		FROM deepgraph_writes WHERE thread = $1 AND checkpoint = (SELECT id FROM cp)
		ORDER BY task`
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
		// The thread's row, locked, with its lease: the holder ('' for none)
		// and whether the lease is live, by the server's clock.
		lockThread:   qualify(`SELECT lease_run, lease_until, lease_until > now() FROM deepgraph_threads WHERE thread = $1 FOR UPDATE`),
		newest:       qualify(`SELECT coalesce((SELECT id FROM deepgraph_checkpoints WHERE thread = $1 AND ns = $2 ORDER BY seq DESC LIMIT 1), '')`),
		parentExists: qualify(`SELECT EXISTS (SELECT FROM deepgraph_checkpoints WHERE thread = $1 AND ns = $2 AND id = $3)`),
		// Affects no row when the thread has the id already.
		insert: qualify(`INSERT INTO deepgraph_checkpoints (thread, ns, id, parent, step, created, source, run, channels, versions, data)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (thread, id) DO NOTHING`),
		insertBlobs: qualify(`INSERT INTO deepgraph_blobs (thread, ns, channel, version, data)
			SELECT $1, $2, v.channel, v.version, v.data FROM unnest($3::text[], $4::text[], $5::bytea[]) AS v(channel, version, data)
			ON CONFLICT DO NOTHING`),
		insertWrites: qualify(`INSERT INTO deepgraph_writes (thread, checkpoint, task, data)
			SELECT $1, $2, r.task, r.data FROM unnest($3::integer[], $4::bytea[]) AS r(task, data)
			ON CONFLICT (thread, checkpoint, task) DO UPDATE SET data = excluded.data`),
		// The records are written only when the checkpoint ($2 in namespace
		// $6) exists and no other run than $5 holds a live lease; the share
		// lock on the thread's row orders them with a lease's change.
		putWrites: qualify(`WITH lease AS (SELECT lease_run, lease_until FROM deepgraph_threads WHERE thread = $1 FOR SHARE),
			ok AS (SELECT FROM lease WHERE (lease_run IN ('', $5) OR lease_until <= now())
				AND EXISTS (SELECT FROM deepgraph_checkpoints WHERE thread = $1 AND ns = $6 AND id = $2))
			INSERT INTO deepgraph_writes (thread, checkpoint, task, data)
			SELECT $1, $2, r.task, r.data FROM unnest($3::integer[], $4::bytea[]) AS r(task, data), ok
			ON CONFLICT (thread, checkpoint, task) DO UPDATE SET data = excluded.data`),
		// Why putWrites wrote nothing: the lease, and whether the checkpoint exists.
		writeCheck: qualify(`SELECT coalesce(t.lease_run, ''), coalesce(t.lease_until, 'epoch'), coalesce(t.lease_until > now(), false),
			EXISTS (SELECT FROM deepgraph_checkpoints WHERE thread = $1 AND ns = $2 AND id = $3)
			FROM (SELECT) AS one LEFT JOIN deepgraph_threads t ON t.thread = $1`),
		getNewest: qualify(getSQL(`SELECT id, data, channels, versions FROM deepgraph_checkpoints WHERE thread = $1 AND ns = $2 AND $3 = '' ORDER BY seq DESC LIMIT 1`)),
		// The namespace ($2) is checked by Get: an id is unique in its thread.
		getByID: qualify(getSQL(`SELECT id, data, channels, versions FROM deepgraph_checkpoints WHERE thread = $1 AND $2::text IS NOT NULL AND id = $3`)),
		seq:     qualify(`SELECT seq FROM deepgraph_checkpoints WHERE thread = $1 AND ns = $2 AND id = $3`),
		// Newest first, before seq $3, at most $4 (all when NULL).
		list: qualify(`SELECT id, channels, versions, ` + docSQL("data", "$5") + `
			FROM deepgraph_checkpoints WHERE thread = $1 AND ns = $2 AND seq < $3 ORDER BY seq DESC LIMIT $4`),
		// The records of the checkpoints $2 (kind 'w') and the channel values
		// $3/$4 (kind 'b'): rows of (kind, checkpoint or version, task, channel, size, data).
		listParts: qualify(`SELECT 'w', checkpoint, task, '', ` + docSQL("data", "$5") + `
			FROM deepgraph_writes WHERE thread = $1 AND checkpoint = ANY($2::text[])
			UNION ALL
			SELECT 'b', b.version, -1, b.channel, ` + docSQL("b.data", "$5") + `
			FROM deepgraph_blobs b JOIN unnest($3::text[], $4::text[]) AS v(channel, version)
				ON b.channel = v.channel AND b.version = v.version
			WHERE b.thread = $1
			ORDER BY 2, 3`),
		lockForDelete: qualify(`SELECT lease_run, lease_until, lease_until > now() FROM deepgraph_threads WHERE thread = $1 FOR UPDATE`),
		// The thread's checkpoints and channel values go with its row.
		deleteThread: qualify(`WITH records AS (DELETE FROM deepgraph_writes WHERE thread = $1)
			DELETE FROM deepgraph_threads WHERE thread = $1`),
		pruneList: qualify(`SELECT id, ns, run, created, channels, versions FROM deepgraph_checkpoints WHERE thread = $1 ORDER BY seq`),
		pruneDelete: qualify(`WITH records AS (DELETE FROM deepgraph_writes WHERE thread = $1 AND checkpoint = ANY($2::text[]))
			DELETE FROM deepgraph_checkpoints WHERE thread = $1 AND id = ANY($2::text[])`),
		// Deletes the channel values no checkpoint in $2/$3 refers to.
		pruneBlobs: qualify(`DELETE FROM deepgraph_blobs b WHERE b.thread = $1
			AND (b.channel, b.version) NOT IN (SELECT * FROM unnest($2::text[], $3::text[]))`),
		// Takes or renews the lease of $1 for run $2 for $3 microseconds;
		// TakeThread holds the row, locked, and has checked that no other
		// run holds a live lease.
		takeLease: qualify(`UPDATE deepgraph_threads
			SET lease_run = $2, lease_until = now() + $3::bigint * interval '1 microsecond', lease_stop = (lease_run = $2 AND lease_stop)
			WHERE thread = $1
			RETURNING lease_until, lease_stop`),
		releaseLease: qualify(`UPDATE deepgraph_threads SET lease_run = '', lease_until = 'epoch', lease_stop = false WHERE thread = $1 AND lease_run = $2`),
		stopLease: qualify(`UPDATE deepgraph_threads SET lease_stop = true
			WHERE thread = $1 AND lease_run <> '' AND lease_until > now() RETURNING lease_run, lease_until`),
		storedBytes: qualify(`SELECT
			(SELECT coalesce(sum(octet_length(data)), 0) FROM deepgraph_checkpoints WHERE thread = $1) +
			(SELECT coalesce(sum(octet_length(data)), 0) FROM deepgraph_writes WHERE thread = $1) +
			(SELECT coalesce(sum(octet_length(data)), 0) FROM deepgraph_blobs WHERE thread = $1)`),
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
