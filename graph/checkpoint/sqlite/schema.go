package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	sqlite3 "github.com/ncruces/go-sqlite3"
)

// applicationID marks a file as a deepgraph store ("dgph"), in SQLite's
// application_id.
const applicationID = 0x64677068

// schemaV1 is the first schema.
const schemaV1 = `
CREATE TABLE deepgraph_checkpoints (
	seq     INTEGER PRIMARY KEY, -- insertion order: a new row's is the greatest
	thread  TEXT NOT NULL,
	id      TEXT NOT NULL,
	parent  TEXT NOT NULL, -- '' for none
	step    INTEGER NOT NULL,
	source  TEXT NOT NULL,
	created TEXT NOT NULL, -- RFC 3339, UTC
	data    BLOB NOT NULL, -- the checkpoint, as storecodec encodes it
	UNIQUE (thread, id)
) STRICT;
CREATE INDEX deepgraph_checkpoints_by_thread ON deepgraph_checkpoints (thread, seq);

CREATE TABLE deepgraph_writes (
	thread     TEXT NOT NULL,
	checkpoint TEXT NOT NULL, -- the id of the checkpoint whose step the task belongs to
	task       INTEGER NOT NULL,
	data       BLOB NOT NULL, -- the task record, as storecodec encodes it
	PRIMARY KEY (thread, checkpoint, task)
) STRICT, WITHOUT ROWID;
`

// schemaV2 adds namespaces (a subgraph's line of checkpoints), the run
// that wrote each checkpoint, the versions of its channels, the channel
// values themselves — stored once per version, shared by the checkpoints
// that did not change them — and the leases of threads. A checkpoint's id
// stays unique within its thread, whatever its namespace, so the keys are
// those of version 1; version 1's checkpoints keep their whole state in
// their document and are read as they are.
const schemaV2 = `
ALTER TABLE deepgraph_checkpoints ADD COLUMN ns TEXT NOT NULL DEFAULT '';
ALTER TABLE deepgraph_checkpoints ADD COLUMN run TEXT NOT NULL DEFAULT '';
ALTER TABLE deepgraph_checkpoints ADD COLUMN versions TEXT NOT NULL DEFAULT ''; -- the channels' versions, as a JSON object
DROP INDEX deepgraph_checkpoints_by_thread;
CREATE INDEX deepgraph_checkpoints_by_ns ON deepgraph_checkpoints (thread, ns, seq);

CREATE TABLE deepgraph_blobs (
	thread  TEXT NOT NULL,
	channel TEXT NOT NULL,
	version TEXT NOT NULL, -- the id of the checkpoint that wrote the value
	ns      TEXT NOT NULL,
	data    BLOB NOT NULL, -- the channel's value, as JSON
	PRIMARY KEY (thread, channel, version)
) STRICT;

CREATE TABLE deepgraph_leases (
	thread  TEXT PRIMARY KEY,
	run     TEXT NOT NULL,
	expires INTEGER NOT NULL, -- Unix milliseconds
	stop    INTEGER NOT NULL DEFAULT 0
) STRICT;
`

// migrations are the schema's versions in order: migrations()[v] takes a
// file from version v to v+1. Only ever append to it.
func migrations() []string { return []string{schemaV1, schemaV2} }

// identity is what a file says it is.
type identity struct {
	app     int32
	version int
	tables  int    // tables other than SQLite's own
	some    string // the first shownTables of them by name, comma-separated
}

// shownTables is how many of its tables an error about a file names.
const shownTables = 5

// identify reads the identity of the file through q.
func identify(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (identity, error) {
	var id identity
	var some sql.NullString
	err := q.QueryRowContext(ctx, `
		SELECT a.application_id, v.user_version,
			(SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'),
			(SELECT group_concat(name, ', ') FROM
				(SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name LIMIT ?))
		FROM pragma_application_id() AS a, pragma_user_version() AS v`, shownTables).Scan(&id.app, &id.version, &id.tables, &some)
	id.some = some.String
	return id, err
}

// check refuses a file that is not a deepgraph store this code can use.
func (id identity) check(path string) error {
	tables := id.some
	if id.tables > shownTables {
		tables += ", …"
	}
	switch {
	case id.app == 0 && id.tables > 0:
		return fmt.Errorf("sqlite: %s is an SQLite database of another program (it has the tables %s), not a deepgraph store: choose another path for the store", path, tables)
	case id.app != 0 && id.app != applicationID:
		return fmt.Errorf("sqlite: %s is an SQLite database of another program (its application id is %#x; tables: %s), not a deepgraph store: choose another path for the store", path, id.app, orNone(tables))
	case id.version > len(migrations()):
		return fmt.Errorf("sqlite: %s was written by a newer version of deepgraph (schema version %d; this one knows up to %d): upgrade deepgraph to use this store", path, id.version, len(migrations()))
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// setUp checks that the file is a deepgraph store, or an empty file, puts
// it in WAL mode and migrates its schema to this version.
func (s *Saver) setUp(ctx context.Context) error {
	id, err := identify(ctx, s.writer)
	if err != nil {
		return s.notAStore(err)
	}
	if err := id.check(s.path); err != nil {
		return err
	}
	if id.version == 0 && id.tables == 0 {
		// A new file: let DeleteThread and Prune give the space of what
		// they delete back to the file system (PRAGMA incremental_vacuum).
		// It must be set before the first table is made, and outside a
		// transaction. It costs nothing but space when it cannot be set
		// (another process holds the new file), so a failure is let be.
		_, _ = s.writer.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL")
	}
	if err := s.setWAL(ctx); err != nil {
		return err
	}
	if id.version == len(migrations()) {
		return nil
	}
	return s.migrate(ctx)
}

// setWAL puts the file in WAL mode, which it keeps. SQLite does not wait
// for the other connections to the file while it changes the journal mode
// — when several processes open a new file at once — so setWAL tries
// again for as long as the busy timeout.
func (s *Saver) setWAL(ctx context.Context) error {
	deadline := time.Now().Add(s.busyTimeout)
	var mode string
	err := s.writer.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
	for errors.Is(err, sqlite3.BUSY) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
		err = s.writer.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
	}
	switch {
	case err != nil:
		return s.errorf(err, "setting WAL mode")
	case !strings.EqualFold(mode, "wal"):
		return fmt.Errorf("sqlite: %s: the store needs WAL mode, which its file system does not provide (journal mode %s): put it on a local disk", s.path, mode)
	}
	return nil
}

// migrate brings the schema to this version in one IMMEDIATE transaction,
// after checking again, under the lock, what another process may have
// done since setUp looked.
func (s *Saver) migrate(ctx context.Context) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return s.errorf(err, "starting the schema migration")
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	id, err := identify(ctx, tx)
	if err != nil {
		return s.notAStore(err)
	}
	if err := id.check(s.path); err != nil {
		return err
	}
	steps := migrations()
	if id.version == len(steps) {
		return nil // another process migrated it
	}

	for v := id.version; v < len(steps); v++ {
		if _, err := tx.ExecContext(ctx, steps[v]); err != nil {
			return s.errorf(err, "migrating the schema from version %d to %d", v, v+1)
		}
	}
	// PRAGMA takes no parameters; both values are integers of this package.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d", applicationID, len(steps))); err != nil {
		return s.errorf(err, "recording the schema version")
	}
	if err := tx.Commit(); err != nil {
		return s.errorf(err, "committing the schema migration")
	}
	return nil
}

// notAStore explains a failure to read the file's identity.
func (s *Saver) notAStore(err error) error {
	if damaged(err) {
		return fmt.Errorf("sqlite: %s is not a deepgraph store: it is not an SQLite database, or it is damaged; choose another path for the store (or, if it was one, move it aside and restore a copy): %w", s.path, err)
	}
	return s.errorf(err, "reading the store's schema version")
}
