package runstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The SQL stores share this file: one implementation of Store over a small
// interface (sqlDB) that sqlite.go implements with database/sql and
// postgres.go with pgx. Both dialects take the same statements, with $n
// parameters; only the table definitions, the transaction that creates
// them, the row locks and the encoding of times differ.
//
// Writes that touch several rows run in a transaction. In SQLite a
// transaction holds the database's write lock (_txlock=immediate), so they
// are serialized; in PostgreSQL (read committed) the row locks keep the
// tables consistent: RecordCall holds a key-share lock on the run while
// it adds a call, which a deletion of the run waits for, and a removal of
// the run's calls runs after the deletion of the run, so that it sees the
// calls of recorders that finished meanwhile, while later recorders find
// no run.

// schemaVersion is the version of the tables this code reads and writes,
// kept in the meta table as schema_version. Version 1 had research_runs
// only; version 2 added research_threads, with a row for each thread of
// the stored runs, and research_run_events; version 3 added
// research_runs.cost_usd, NULL (unknown) in the runs stored before;
// version 4 added research_run_calls; version 5 added
// research_threads.data, NULL in the threads stored before, and dropped
// research_run_events, the event log of research serve's first API, which
// nothing reads any more.
const schemaVersion = 5

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
	// tx runs fn in a transaction and commits when fn returns nil.
	tx(ctx context.Context, fn func(sqlConn) error) error
}

// dialect is what differs between the SQL stores.
type dialect struct {
	// name is the database's name in error messages.
	name string
	// create makes the tables and their indexes, if they are missing.
	create []string
	// timeArg encodes a time (never zero) as a statement argument.
	timeArg func(time.Time) any
	// param is the placeholder of the nth parameter of a statement that
	// has many. Other statements use $n, which SQLite takes too, but looks
	// up by name in a list, which takes time in the square of their number.
	param func(n int) string
	// keyShare and forUpdate end a SELECT that locks the rows it reads
	// until the end of the transaction: against their deletion (keyShare),
	// or against any change (forUpdate). They are empty when a transaction
	// locks the whole database.
	keyShare, forUpdate string
	// runOfThread is the condition that the run r is of the thread t, in
	// the collation of research_runs_thread, so that the index serves it.
	runOfThread string
	// transient reports whether an error of the driver may pass when
	// the statement or transaction runs again (see retryDB).
	transient func(error) bool
	// hasColumn counts the columns named $2 of the table $1 (0 or 1);
	// added are the columns added to tables since version 2, which
	// upgrading adds when they are missing.
	hasColumn string
	added     []addedColumn
}

// addedColumn is a column added to a table after its creation: ALTER
// TABLE table ADD COLUMN column definition.
type addedColumn struct{ table, column, definition string }

// sqlStore is the Store over a SQL database.
type sqlStore struct {
	db sqlDB
	d  dialect
}

// openSQL creates the tables if they are missing, under the lock of
// db.inTx, and returns the store.
func openSQL(ctx context.Context, db sqlDB, d dialect) (*sqlStore, error) {
	db = retryDB{db, d.transient}
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
		// Before version 2 the threads had no rows: each thread of the
		// stored runs gets one (nothing to do in a new database).
		if _, err := c.exec(ctx, backfillThreads); err != nil {
			return err
		}
		// research_run_events is gone since version 5 (the stores of
		// version 2 to 4 have it).
		if _, err := c.exec(ctx, `DROP TABLE IF EXISTS research_run_events`); err != nil {
			return err
		}
		// Columns added since (a run's cost before version 3, a thread's
		// data before version 5) are NULL in the rows stored before.
		for _, col := range d.added {
			var n int64
			if err := scanOne(ctx, c, []any{&n}, d.hasColumn, col.table, col.column); err != nil {
				return err
			}
			if n == 0 {
				if _, err := c.exec(ctx, `ALTER TABLE `+col.table+` ADD COLUMN `+col.column+` `+col.definition); err != nil {
					return err
				}
			}
		}
		_, err = c.exec(ctx, `INSERT INTO research_runs_meta (key, value) VALUES ('schema_version', $1)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, schemaVersion)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("runstore: preparing the tables of runs (research_runs…) in %s: %w", d.name, err)
	}
	return s, nil
}

// openSQLReadOnly returns the store of db, which it only reads, after
// checking that its tables are of this version.
func openSQLReadOnly(ctx context.Context, db sqlDB, d dialect) (*sqlStore, error) {
	var version int64
	err := scanOne(ctx, db, []any{&version}, `SELECT value FROM research_runs_meta WHERE key = 'schema_version'`)
	switch {
	case errors.Is(err, errNoRows):
		return nil, fmt.Errorf("runstore: the tables of runs (research_runs…) in %s have no version: open the store once where it can be written, to set them up", d.name)
	case err != nil:
		return nil, fmt.Errorf("runstore: reading the version of the tables of runs (research_runs…) in %s: %w (if the store has never kept a run, open it once where it can be written)", d.name, err)
	case version > schemaVersion:
		return nil, fmt.Errorf("runstore: the table research_runs has version %d, and this version of deepgraph reads up to %d: upgrade deepgraph", version, schemaVersion)
	case version < schemaVersion:
		return nil, fmt.Errorf("runstore: the tables of runs (research_runs…) in %s have version %d and need an upgrade to %d, which a read-only open cannot make: open the store once where it can be written", d.name, version, schemaVersion)
	}
	return &sqlStore{db: db, d: d}, nil
}

// backfillThreads gives each thread of the stored runs its row: kind and
// title from its oldest run (by started, then id), created when that run
// started and updated when its newest did.
const backfillThreads = `INSERT INTO research_threads (id, kind, title, created, updated)
	SELECT r.thread, r.kind, r.question, r.started,
		(SELECT max(n.started) FROM research_runs n WHERE n.thread = r.thread)
	FROM research_runs r
	WHERE NOT EXISTS (SELECT 1 FROM research_runs o WHERE o.thread = r.thread
		AND (o.started < r.started OR (o.started = r.started AND o.id < r.id)))
	ON CONFLICT (id) DO NOTHING`

// summaryColumns are the columns of a run but its documents, in the order
// of runFields.
const summaryColumns = `id, thread, kind, question, status, started, updated, ended, error, tokens, calls, host, pid, cost_usd`

// docHint is what to do about a stored document that cannot be read.
const docHint = "the run cannot be read back; delete it (research rm %s)"

func (s *sqlStore) Create(ctx context.Context, r *Run) error {
	if err := checkCreate(r); err != nil {
		return err
	}
	n := normalized(r)
	err := s.db.tx(ctx, func(c sqlConn) error {
		changed, err := c.exec(ctx, `INSERT INTO research_runs (`+summaryColumns+`, settings, report)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
			ON CONFLICT (id) DO NOTHING`,
			n.ID, n.Thread, string(n.Kind), n.Question, string(n.Status), s.time(n.Started), s.time(n.Updated), s.time(n.Ended),
			n.Error, n.Tokens, n.Calls, n.Host, n.PID, cost(n.Cost), document(n.Settings), document(n.Report))
		switch {
		case err != nil:
			return err
		case changed == 0 && !(retried(c) && s.storedAs(ctx, c, n)):
			return exists(r.ID)
		}
		// The thread's row: new, or later, or with its kind and title
		// filled in.
		_, err = c.exec(ctx, `INSERT INTO research_threads (id, kind, title, created, updated)
			VALUES ($1, $2, $3, $4, $4)
			ON CONFLICT (id) DO UPDATE SET
				updated = CASE WHEN excluded.updated > research_threads.updated
					THEN excluded.updated ELSE research_threads.updated END,
				kind = CASE WHEN research_threads.kind = '' THEN excluded.kind ELSE research_threads.kind END,
				title = CASE WHEN research_threads.title = '' THEN excluded.title ELSE research_threads.title END`,
			n.Thread, string(n.Kind), n.Question, s.time(n.Started))
		return err
	})
	if err != nil && !ours(err) {
		return fmt.Errorf("runstore: storing new run %q in %s: %w", r.ID, s.d.name, err)
	}
	return err
}

// storedAs reports whether the stored run with n's id is n as Create
// stores it: a Create run again after its commit's reply was lost finds
// it so.
func (s *sqlStore) storedAs(ctx context.Context, c sqlConn, n *Run) bool {
	var got Run
	err := scanOne(ctx, c, runFields(&got), `SELECT `+summaryColumns+` FROM research_runs WHERE id = $1`, n.ID)
	return err == nil && got.Thread == n.Thread && got.Question == n.Question && got.Status == n.Status &&
		got.Started.Equal(normalTime(n.Started)) && got.Host == n.Host && got.PID == n.PID
}

func (s *sqlStore) Update(ctx context.Context, r *Run) error {
	if err := checkUpdate(r); err != nil {
		return err
	}
	n := normalized(r)
	changed, err := s.db.exec(ctx, `UPDATE research_runs SET question = $2, status = $3, updated = $4, ended = $5,
		error = $6, tokens = $7, calls = $8, host = $9, pid = $10, settings = $11, report = $12, cost_usd = $13 WHERE id = $1`,
		n.ID, n.Question, string(n.Status), s.time(n.Updated), s.time(n.Ended),
		n.Error, n.Tokens, n.Calls, n.Host, n.PID, document(n.Settings), document(n.Report), cost(n.Cost))
	switch {
	case err != nil:
		return fmt.Errorf("runstore: updating run %q in %s: %w", r.ID, s.d.name, err)
	case changed == 0:
		return notFound(r.ID)
	}
	return nil
}

// Put updates the run's record in one statement and, when no run has its
// ID, creates it; a Create that finds it made meanwhile (by another Put)
// gives way to the update. A queued run, most often new, is created first.
func (s *sqlStore) Put(ctx context.Context, r *Run) error {
	if err := checkCreate(r); err != nil {
		return err
	}
	if r.Status == StatusQueued {
		if err := s.Create(ctx, r); !errors.Is(err, ErrExists) {
			return err
		}
	}
	for range 2 {
		n := normalized(r)
		changed, err := s.db.exec(ctx, `UPDATE research_runs SET question = $2, status = $3, updated = $4, ended = $5,
			error = $6, host = $7, pid = $8, settings = $9 WHERE id = $1`,
			n.ID, n.Question, string(n.Status), s.time(n.Updated), s.time(n.Ended), n.Error, n.Host, n.PID, document(n.Settings))
		switch {
		case err != nil:
			return fmt.Errorf("runstore: updating run %q in %s: %w", r.ID, s.d.name, err)
		case changed > 0:
			return nil
		}
		if err := s.Create(ctx, r); !errors.Is(err, ErrExists) {
			return err
		}
	}
	return fmt.Errorf("runstore: storing run %q in %s: it is created and deleted as it is written", r.ID, s.d.name)
}

func (s *sqlStore) SetSpending(ctx context.Context, id string, tokens int64, calls int, usd *float64) error {
	r := &Run{ID: id, Status: StatusRunning, Tokens: tokens, Calls: calls, Cost: usd}
	if err := checkUpdate(r); err != nil {
		return err
	}
	changed, err := s.db.exec(ctx, `UPDATE research_runs SET tokens = $2, calls = $3, cost_usd = $4 WHERE id = $1`,
		id, tokens, calls, cost(usd))
	switch {
	case err != nil:
		return fmt.Errorf("runstore: writing the spending of run %q in %s: %w", id, s.d.name, err)
	case changed == 0:
		return notFound(id)
	}
	return nil
}

func (s *sqlStore) SetReport(ctx context.Context, id string, report json.RawMessage) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := checkDocument(id, "report", report, int64(len(report)), ErrInvalid, ""); err != nil {
		return err
	}
	changed, err := s.db.exec(ctx, `UPDATE research_runs SET report = $2 WHERE id = $1`, id, document(report))
	switch {
	case err != nil:
		return fmt.Errorf("runstore: writing the report of run %q in %s: %w", id, s.d.name, err)
	case changed == 0:
		return notFound(id)
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
	query += ` ORDER BY started DESC, id DESC` + page(opts.Limit, opts.Offset)
	runs, err := s.summaries(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("runstore: listing runs in %s: %w", s.d.name, err)
	}
	return runs, nil
}

// page is the LIMIT and OFFSET clause of a page of a list: "" for all of
// it.
func page(limit, offset int) string {
	if limit <= 0 && offset <= 0 {
		return ""
	}
	if limit <= 0 {
		limit = math.MaxInt64 // SQLite wants a LIMIT before an OFFSET
	}
	clause := ` LIMIT ` + strconv.Itoa(limit)
	if offset > 0 {
		clause += ` OFFSET ` + strconv.Itoa(offset)
	}
	return clause
}

func (s *sqlStore) Delete(ctx context.Context, id string) error {
	err := s.db.tx(ctx, func(c sqlConn) error {
		changed, err := c.exec(ctx, `DELETE FROM research_runs WHERE id = $1`, id)
		switch {
		case err != nil:
			return err
		case changed == 0 && retried(c):
			return nil // deleted by the attempt whose reply was lost, or gone anyway
		case changed == 0:
			return notFound(id)
		}
		return deleteRunRows(ctx, c, id)
	})
	if err != nil && !ours(err) {
		return fmt.Errorf("runstore: deleting run %q from %s: %w", id, s.d.name, err)
	}
	return err
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
	var threads []string // of the pruned runs, each once
	for _, r := range old {
		if !prunable(r, before, now) {
			continue
		}
		var removed bool
		err := s.db.tx(ctx, func(c sqlConn) error {
			changed, err := c.exec(ctx, `DELETE FROM research_runs WHERE id = $1 AND status = $2 AND updated IS NOT DISTINCT FROM $3`,
				r.ID, string(r.Status), s.time(r.Updated))
			if err != nil || changed == 0 {
				return err
			}
			removed = true
			return deleteRunRows(ctx, c, r.ID)
		})
		if err != nil {
			return pruned, fmt.Errorf("runstore: pruning run %q from %s: %w", r.ID, s.d.name, err)
		}
		if removed {
			pruned = append(pruned, r)
			if !slices.Contains(threads, r.Thread) {
				threads = append(threads, r.Thread)
			}
		}
	}
	for _, thread := range threads {
		// The lock waits for a Create adding a run to the thread, whose run
		// the next statement then sees.
		err := s.db.tx(ctx, func(c sqlConn) error {
			if _, err := c.exec(ctx, `SELECT id FROM research_threads WHERE id = $1`+s.d.forUpdate, thread); err != nil {
				return err
			}
			_, err := c.exec(ctx, `DELETE FROM research_threads WHERE id = $1
				AND NOT EXISTS (SELECT 1 FROM research_runs WHERE thread = $1)`, thread)
			return err
		})
		if err != nil {
			return pruned, fmt.Errorf("runstore: removing thread %q, whose runs were pruned, from %s: %w", thread, s.d.name, err)
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

// threadColumns are the columns of a thread (as t) in the order of
// threadFields.
func (s *sqlStore) threadColumns() string {
	return `t.id, t.kind, t.title, t.created, t.updated,
		(SELECT count(*) FROM research_runs r WHERE ` + s.d.runOfThread + `), t.data`
}

// threadFields are the scan destinations of threadColumns.
func threadFields(t *Thread) []any {
	return []any{&t.ID, (*string)(&t.Kind), &t.Title, dbTime{&t.Created}, dbTime{&t.Updated}, &t.Runs, (*[]byte)(&t.Data)}
}

func (s *sqlStore) CreateThread(ctx context.Context, t *Thread) error {
	if err := checkThread(t); err != nil {
		return err
	}
	created, updated := normalTime(t.Created), normalTime(t.Updated)
	if updated.IsZero() {
		updated = created
	}
	err := s.db.tx(ctx, func(c sqlConn) error {
		changed, err := c.exec(ctx, `INSERT INTO research_threads (id, kind, title, created, updated, data)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
			t.ID, string(t.Kind), text(t.Title), s.time(created), s.time(updated), document(t.Data))
		if err != nil || changed > 0 {
			return err
		}
		if retried(c) {
			// Stored by the attempt whose commit's reply was lost?
			var got Thread
			err := scanOne(ctx, c, threadFields(&got), `SELECT `+s.threadColumns()+` FROM research_threads t WHERE t.id = $1`, t.ID)
			if err == nil && got.Kind == t.Kind && got.Title == text(t.Title) && got.Created.Equal(created) {
				return nil
			}
		}
		return fmt.Errorf("%w: thread %q is already stored; create it with another id (NewID), or add runs to it", ErrExists, t.ID)
	})
	if err != nil && !ours(err) {
		return fmt.Errorf("runstore: storing new thread %q in %s: %w", t.ID, s.d.name, err)
	}
	return err
}

func (s *sqlStore) GetThread(ctx context.Context, id string) (*Thread, error) {
	t := new(Thread)
	err := scanOne(ctx, s.db, threadFields(t), `SELECT `+s.threadColumns()+` FROM research_threads t WHERE t.id = $1`, id)
	switch {
	case errors.Is(err, errNoRows):
		return nil, threadNotFound(id)
	case err != nil:
		return nil, fmt.Errorf("runstore: reading thread %q from %s: %w", id, s.d.name, err)
	}
	return t, nil
}

func (s *sqlStore) ListThreads(ctx context.Context, opts ThreadListOptions) ([]*Thread, error) {
	threads, err := queryAll(ctx, s.db, func(rows sqlRows) (*Thread, error) {
		t := new(Thread)
		return t, rows.Scan(threadFields(t)...)
	}, `SELECT `+s.threadColumns()+` FROM research_threads t ORDER BY t.updated DESC, t.id DESC`+page(opts.Limit, opts.Offset))
	switch {
	case err != nil:
		return nil, fmt.Errorf("runstore: listing threads in %s: %w", s.d.name, err)
	case threads == nil:
		return []*Thread{}, nil
	}
	return threads, nil
}

func (s *sqlStore) SetThreadData(ctx context.Context, id string, data json.RawMessage) error {
	if err := checkThreadData(id, data); err != nil {
		return err
	}
	changed, err := s.db.exec(ctx, `UPDATE research_threads SET data = $1 WHERE id = $2`, document(data), id)
	switch {
	case err != nil:
		return fmt.Errorf("runstore: writing the data of thread %q in %s: %w", id, s.d.name, err)
	case changed == 0:
		if _, err := s.GetThread(ctx, id); err == nil {
			return nil // written by an attempt whose reply was lost
		}
		return threadNotFound(id)
	}
	return nil
}

func (s *sqlStore) PutThreadData(ctx context.Context, t *Thread) error {
	if err := checkThread(t); err != nil {
		return err
	}
	created, updated := normalTime(t.Created), normalTime(t.Updated)
	if updated.IsZero() {
		updated = created
	}
	_, err := s.db.exec(ctx, `INSERT INTO research_threads (id, kind, title, created, updated, data)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO UPDATE SET data = excluded.data`,
		t.ID, string(t.Kind), text(t.Title), s.time(created), s.time(updated), document(t.Data))
	if err != nil {
		return fmt.Errorf("runstore: writing thread %q in %s: %w", t.ID, s.d.name, err)
	}
	return nil
}

// DeleteThread removes the thread's row first: a Create adding a run to
// the thread meanwhile waits for it, and then makes the row anew.
func (s *sqlStore) DeleteThread(ctx context.Context, id string) error {
	err := s.db.tx(ctx, func(c sqlConn) error {
		threads, err := c.exec(ctx, `DELETE FROM research_threads WHERE id = $1`, id)
		if err != nil {
			return err
		}
		runs, err := queryAll(ctx, c, func(rows sqlRows) (string, error) {
			var id string
			err := rows.Scan(&id)
			return id, err
		}, `DELETE FROM research_runs WHERE thread = $1 RETURNING id`, id)
		if err != nil {
			return err
		}
		if threads == 0 && len(runs) == 0 && !retried(c) {
			return threadNotFound(id)
		}
		for _, run := range runs {
			if err := deleteRunRows(ctx, c, run); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && !ours(err) {
		return fmt.Errorf("runstore: deleting thread %q from %s: %w", id, s.d.name, err)
	}
	return err
}

// deleteRunRows removes the rows that go with a deleted run: its recorded
// calls.
func deleteRunRows(ctx context.Context, c sqlConn, id string) error {
	_, err := c.exec(ctx, `DELETE FROM research_run_calls WHERE run_id = $1`, id)
	return err
}

// threadNotFound is the error for a missing thread.
func threadNotFound(id string) error {
	return fmt.Errorf("%w: no thread has the id %q", ErrNotFound, id)
}

// ours reports whether err is one of the package's errors, which a store
// returns as they are, already saying what they are about.
func ours(err error) bool {
	for _, e := range []error{ErrNotFound, ErrAmbiguous, ErrExists, ErrInvalid, ErrTooLarge, ErrCorrupt, ErrClaimed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
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
	if r, ok := c.(retryDB); ok {
		var all []T
		err := r.read(ctx, func(c sqlConn) error {
			var err error
			all, err = queryAll(ctx, c, scan, query, args...)
			return err
		})
		return all, err
	}
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
		&r.Error, &r.Tokens, &r.Calls, &r.Host, &r.PID, &r.Cost}
}

// errNoRows is scanOne's error for an empty result.
var errNoRows = errors.New("no rows")

// scanOne scans the first row of a query into dest.
func scanOne(ctx context.Context, c sqlConn, dest []any, query string, args ...any) error {
	if r, ok := c.(retryDB); ok {
		return r.read(ctx, func(c sqlConn) error { return scanOne(ctx, c, dest, query, args...) })
	}
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

// cost encodes a run's cost as a statement argument: NULL when unknown.
func cost(usd *float64) any {
	if usd == nil {
		return nil
	}
	return *usd
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
