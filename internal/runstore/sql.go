package runstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The SQL stores share this file: one implementation of Store over a small
// interface (sqlDB) that sqlite.go implements with database/sql and
// postgres.go with pgx. Both dialects take the same statements, with $n
// parameters; only the table definitions, the transaction that creates
// them and the encoding of times differ.

// schemaVersion is the version of the tables this code reads and writes,
// kept in the meta table as schema_version.
const schemaVersion = 1

// sqlConn runs statements on a database or in a transaction.
type sqlConn interface {
	// exec runs a statement and returns the number of rows it changed.
	exec(ctx context.Context, query string, args ...any) (int64, error)
	query(ctx context.Context, query string, args ...any) (sqlRows, error)
}

// sqlRows is a result set: *sql.Rows or pgx.Rows.
type sqlRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// sqlDB is a database handle.
type sqlDB interface {
	sqlConn
	// inTx runs fn in a transaction that holds the lock serializing the
	// creation of the tables, where the tables can be created, and commits
	// when fn returns nil.
	inTx(ctx context.Context, fn func(sqlConn) error) error
}

// dialect is what differs between the SQL stores.
type dialect struct {
	// name is the database's name in error messages.
	name string
	// create makes the runs table and its indexes.
	create []string
	// timeArg encodes a time (never zero) as a statement argument.
	timeArg func(time.Time) any
}

// sqlStore is the Store over a SQL database.
type sqlStore struct {
	db sqlDB
	d  dialect
}

// openSQL creates the tables if they are missing, under the lock of
// db.inTx, and returns the store.
func openSQL(ctx context.Context, db sqlDB, d dialect) (*sqlStore, error) {
	s := &sqlStore{db: db, d: d}
	err := db.inTx(ctx, func(c sqlConn) error {
		if _, err := c.exec(ctx, `CREATE TABLE IF NOT EXISTS research_runs_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL)`); err != nil {
			return err
		}
		var version int64
		err := scanOne(ctx, c, []any{&version}, `SELECT value FROM research_runs_meta WHERE key = 'schema_version'`)
		switch {
		case err != nil && !errors.Is(err, errNoRows):
			return err
		case version > schemaVersion:
			return fmt.Errorf("the table research_runs has version %d, and this version of deepgraph reads up to %d: upgrade deepgraph", version, schemaVersion)
		case version == schemaVersion:
			return nil
		}
		for _, stmt := range d.create {
			if _, err := c.exec(ctx, stmt); err != nil {
				return err
			}
		}
		_, err = c.exec(ctx, `INSERT INTO research_runs_meta (key, value) VALUES ('schema_version', $1)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, schemaVersion)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("runstore: preparing the table of runs research_runs in %s: %w", d.name, err)
	}
	return s, nil
}

// summaryColumns are the columns of a run but its documents, in the order
// of runFields.
const summaryColumns = `id, thread, kind, question, status, started, updated, ended, error, tokens, calls, host, pid`

// docHint is what to do about a stored document that cannot be read.
const docHint = "the run cannot be read back; delete it (research rm %s)"

func (s *sqlStore) Create(ctx context.Context, r *Run) error {
	if err := checkCreate(r); err != nil {
		return err
	}
	n := normalized(r)
	changed, err := s.db.exec(ctx, `INSERT INTO research_runs (`+summaryColumns+`, settings, report)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		ON CONFLICT (id) DO NOTHING`,
		n.ID, n.Thread, string(n.Kind), n.Question, string(n.Status), s.time(n.Started), s.time(n.Updated), s.time(n.Ended),
		n.Error, n.Tokens, n.Calls, n.Host, n.PID, document(n.Settings), document(n.Report))
	switch {
	case err != nil:
		return fmt.Errorf("runstore: storing new run %q in %s: %w", r.ID, s.d.name, err)
	case changed == 0:
		return exists(r.ID)
	}
	return nil
}

func (s *sqlStore) Update(ctx context.Context, r *Run) error {
	if err := checkUpdate(r); err != nil {
		return err
	}
	n := normalized(r)
	changed, err := s.db.exec(ctx, `UPDATE research_runs SET question = $2, status = $3, updated = $4, ended = $5,
		error = $6, tokens = $7, calls = $8, host = $9, pid = $10, settings = $11, report = $12 WHERE id = $1`,
		n.ID, n.Question, string(n.Status), s.time(n.Updated), s.time(n.Ended),
		n.Error, n.Tokens, n.Calls, n.Host, n.PID, document(n.Settings), document(n.Report))
	switch {
	case err != nil:
		return fmt.Errorf("runstore: updating run %q in %s: %w", r.ID, s.d.name, err)
	case changed == 0:
		return notFound(r.ID)
	}
	return nil
}

// Get returns the run with exactly id, or else with the one id that starts
// with it.
func (s *sqlStore) Get(ctx context.Context, id string) (*Run, error) {
	r, err := s.exact(ctx, id)
	if !errors.Is(err, ErrNotFound) {
		return r, err
	}
	if len(id) < MinPrefix {
		return nil, fmt.Errorf("%w: no run has the id %q, and a prefix of an id needs at least %d characters", ErrNotFound, id, MinPrefix)
	}
	matches, err := s.withPrefix(ctx, id)
	switch {
	case err != nil:
		return nil, err
	case len(matches) == 0:
		return nil, fmt.Errorf("%w: no run has an id that is or starts with %q", ErrNotFound, id)
	case len(matches) > 1:
		list := strings.Join(matches[:min(len(matches), maxMatches)], ", ")
		if len(matches) > maxMatches {
			list += ", …"
		}
		return nil, fmt.Errorf("%w: %q starts the ids of runs %s; give more of the id", ErrAmbiguous, id, list)
	}
	return s.exact(ctx, matches[0])
}

func (s *sqlStore) exact(ctx context.Context, id string) (*Run, error) {
	r := new(Run)
	var settingsLen, reportLen int64
	dest := append(runFields(r), &settingsLen, (*[]byte)(&r.Settings), &reportLen, (*[]byte)(&r.Report))
	// The documents come with their lengths, and only when within the limit.
	err := scanOne(ctx, s.db, dest, `SELECT `+summaryColumns+`,
		coalesce(octet_length(settings), 0), CASE WHEN octet_length(settings) <= $2 THEN settings END,
		coalesce(octet_length(report), 0), CASE WHEN octet_length(report) <= $2 THEN report END
		FROM research_runs WHERE id = $1`, id, MaxDocumentBytes)
	switch {
	case errors.Is(err, errNoRows):
		return nil, notFound(id)
	case err != nil:
		return nil, fmt.Errorf("runstore: reading run %q from %s: %w", id, s.d.name, err)
	}
	hint := fmt.Sprintf(docHint, r.ID)
	if err := checkDocument(r.ID, "settings", r.Settings, settingsLen, ErrCorrupt, hint); err != nil {
		return nil, err
	}
	if err := checkDocument(r.ID, "report", r.Report, reportLen, ErrCorrupt, hint); err != nil {
		return nil, err
	}
	if len(r.Settings) == 0 {
		r.Settings = nil
	}
	if len(r.Report) == 0 {
		r.Report = nil
	}
	return r, nil
}

// withPrefix returns the ids starting with prefix, in order: all of them, or
// more than maxMatches.
func (s *sqlStore) withPrefix(ctx context.Context, prefix string) ([]string, error) {
	// LIKE can use the primary key (in PostgreSQL); substr makes the match
	// case-sensitive in SQLite too.
	ids, err := queryAll(ctx, s.db, func(rows sqlRows) (string, error) {
		var id string
		err := rows.Scan(&id)
		return id, err
	}, `SELECT id FROM research_runs WHERE id LIKE $1 ESCAPE '!' AND substr(id, 1, $2) = $3 ORDER BY id LIMIT `+strconv.Itoa(maxMatches+1),
		likePrefix(prefix), utf8.RuneCountInString(prefix), prefix)
	if err != nil {
		return nil, fmt.Errorf("runstore: looking up the runs whose id starts with %q in %s: %w", prefix, s.d.name, err)
	}
	return ids, nil
}

// likePrefix is the LIKE pattern (with ESCAPE '!') matching the strings
// that start with prefix.
func likePrefix(prefix string) string {
	return strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(prefix) + "%"
}

func (s *sqlStore) List(ctx context.Context, opts ListOptions) ([]*Run, error) {
	var where []string
	var args []any
	if opts.Kind != "" {
		args = append(args, string(opts.Kind))
		where = append(where, "kind = $"+strconv.Itoa(len(args)))
	}
	if opts.Thread != "" {
		args = append(args, opts.Thread)
		where = append(where, "thread = $"+strconv.Itoa(len(args)))
	}
	query := `SELECT ` + summaryColumns + ` FROM research_runs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY started DESC, id DESC`
	if opts.Limit > 0 {
		query += ` LIMIT ` + strconv.Itoa(opts.Limit)
	}
	runs, err := s.summaries(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("runstore: listing runs in %s: %w", s.d.name, err)
	}
	return runs, nil
}

func (s *sqlStore) Delete(ctx context.Context, id string) error {
	changed, err := s.db.exec(ctx, `DELETE FROM research_runs WHERE id = $1`, id)
	switch {
	case err != nil:
		return fmt.Errorf("runstore: deleting run %q from %s: %w", id, s.d.name, err)
	case changed == 0:
		return notFound(id)
	}
	return nil
}

// Prune removes each prunable run only if it has not been written since it
// was read: a run resumed meanwhile stays.
func (s *sqlStore) Prune(ctx context.Context, before time.Time) ([]*Run, error) {
	before = normalTime(before)
	old, err := s.summaries(ctx, `SELECT `+summaryColumns+` FROM research_runs WHERE started < $1 ORDER BY started DESC, id DESC`,
		s.time(before))
	if err != nil {
		return nil, fmt.Errorf("runstore: listing the runs to prune in %s: %w", s.d.name, err)
	}
	now := time.Now()
	var pruned []*Run
	for _, r := range old {
		if !prunable(r, before, now) {
			continue
		}
		changed, err := s.db.exec(ctx, `DELETE FROM research_runs WHERE id = $1 AND status = $2 AND updated IS NOT DISTINCT FROM $3`,
			r.ID, string(r.Status), s.time(r.Updated))
		if err != nil {
			return pruned, fmt.Errorf("runstore: pruning run %q from %s: %w", r.ID, s.d.name, err)
		}
		if changed > 0 {
			pruned = append(pruned, r)
		}
	}
	return pruned, nil
}

func (s *sqlStore) ThreadRuns(ctx context.Context, thread string) ([]*Run, error) {
	runs, err := s.summaries(ctx, `SELECT `+summaryColumns+` FROM research_runs WHERE thread = $1 ORDER BY started, id`, thread)
	if err != nil {
		return nil, fmt.Errorf("runstore: listing the runs of thread %q in %s: %w", thread, s.d.name, err)
	}
	return runs, nil
}

// summaries runs a query selecting summaryColumns.
func (s *sqlStore) summaries(ctx context.Context, query string, args ...any) ([]*Run, error) {
	return queryAll(ctx, s.db, func(rows sqlRows) (*Run, error) {
		r := new(Run)
		return r, rows.Scan(runFields(r)...)
	}, query, args...)
}

// queryAll runs a query and returns its rows, each read by scan.
func queryAll[T any](ctx context.Context, c sqlConn, scan func(sqlRows) (T, error), query string, args ...any) ([]T, error) {
	rows, err := c.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var all []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		all = append(all, v)
	}
	return all, rows.Err()
}

// runFields are the scan destinations of summaryColumns.
func runFields(r *Run) []any {
	return []any{&r.ID, &r.Thread, (*string)(&r.Kind), &r.Question, (*string)(&r.Status),
		dbTime{&r.Started}, dbTime{&r.Updated}, dbTime{&r.Ended},
		&r.Error, &r.Tokens, &r.Calls, &r.Host, &r.PID}
}

// errNoRows is scanOne's error for an empty result.
var errNoRows = errors.New("no rows")

// scanOne scans the first row of a query into dest.
func scanOne(ctx context.Context, c sqlConn, dest []any, query string, args ...any) error {
	rows, err := c.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return errNoRows
	}
	return rows.Scan(dest...)
}

// time encodes a normalized time as a statement argument: NULL when zero.
func (s *sqlStore) time(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return s.d.timeArg(t)
}

// document encodes a JSON document as a statement argument: NULL when
// empty.
func document(d []byte) any {
	if len(d) == 0 {
		return nil
	}
	return d
}

// dbTime scans a stored time: microseconds since the Unix epoch (SQLite),
// a timestamptz (PostgreSQL) or NULL (the zero time).
type dbTime struct{ t *time.Time }

// Scan implements sql.Scanner.
func (d dbTime) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*d.t = time.Time{}
	case int64:
		*d.t = time.UnixMicro(v).UTC()
	case time.Time:
		*d.t = v.UTC()
	default:
		return fmt.Errorf("%w: a time is stored as %T", ErrCorrupt, v)
	}
	return nil
}
