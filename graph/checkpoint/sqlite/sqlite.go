package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	sqlite3 "github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/internal/storecodec"
	"github.com/deepgraph/deepgraph/graph/checkpoint/retry"
)

// DefaultBusyTimeout is how long a write waits for the file's lock when
// another connection or process holds it, unless WithBusyTimeout says
// otherwise.
const DefaultBusyTimeout = 10 * time.Second

// Synchronous is how hard SQLite works to make a commit durable (SQLite's
// synchronous pragma, in WAL mode).
type Synchronous string

// The synchronous levels.
const (
	// SyncNormal, the default: a commit survives a crash or a SIGKILL of the
	// process, but the last commits before a power loss or an
	// operating-system crash may be rolled back. The file stays consistent
	// either way.
	SyncNormal Synchronous = "NORMAL"
	// SyncFull: a commit also survives a power loss or an operating-system
	// crash; each commit waits for an fsync.
	SyncFull Synchronous = "FULL"
)

// Option configures Open.
type Option func(*settings)

type settings struct {
	busyTimeout time.Duration
	synchronous Synchronous
	maxBytes    int
	retry       retry.Policy
}

// WithBusyTimeout sets how long a write waits for the file's lock while
// another connection or process holds it before failing: 0 means the
// default (DefaultBusyTimeout), a negative duration not at all.
func WithBusyTimeout(d time.Duration) Option {
	return func(s *settings) { s.busyTimeout = d }
}

// WithRetry sets how a transaction that finds the file busy or locked past
// the busy timeout is tried again: by default (retry.Default) for up to
// 30 s, or until the context's deadline.
func WithRetry(p retry.Policy) Option {
	return func(s *settings) { s.retry = p }
}

// WithSynchronous sets the synchronous level: SyncNormal (the default) or
// SyncFull.
func WithSynchronous(level Synchronous) Option {
	return func(s *settings) { s.synchronous = level }
}

// WithMaxBytes bounds one stored document — a checkpoint or a task record —
// that the store writes or reads back: a larger one is refused with
// graph.ErrCheckpointTooLarge (on reading, before it is loaded). 0 or less
// means the default, which holds the largest state the engine writes
// (graph.DefaultMaxCheckpointBytes) with room to spare.
func WithMaxBytes(n int) Option {
	return func(s *settings) { s.maxBytes = n }
}

// Saver is a graph.Checkpointer kept in an SQLite file. It is safe for
// concurrent use, and several Savers, in one process or several, may share
// a file.
type Saver struct {
	path        string
	maxBytes    int
	busyTimeout time.Duration
	retry       retry.Policy
	db          *sql.DB // reads, and the application's own tables (DB)
	writer      *sql.DB // this Saver's writes, through one connection
	// The statements of Put and PutWrites, prepared once on the writer's
	// connection: parsing them on each call took over a tenth of a write's
	// CPU time.
	heads, insertCheckpoint, insertBlob, putWrite *sql.Stmt
}

var _ graph.Checkpointer = (*Saver)(nil)

// Open opens the store kept in the file at path, creating the file (mode
// 0600) and its directory (mode 0700) if they are missing. path is a file
// path, not a URI: any character a file name may hold is taken literally.
// Open refuses a file that is not a deepgraph store, and one written by a
// newer deepgraph; it migrates one written by an older deepgraph. Close the
// Saver when done.
func Open(ctx context.Context, path string, opts ...Option) (*Saver, error) {
	if path == "" || strings.ContainsRune(path, 0) {
		return nil, fmt.Errorf("sqlite: %q is not a file path: give the store's file, such as runs.db", path)
	}
	set, err := resolve(opts)
	if err != nil {
		return nil, fmt.Errorf("sqlite: opening %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err == nil {
		err = createFile(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: creating the store %s: %w", path, err)
	}
	name := dsn(abs, set)
	s := &Saver{path: abs, maxBytes: set.maxBytes, busyTimeout: set.busyTimeout, retry: set.retry}
	// driver.Open only parses the name, which dsn built.
	if s.db, err = driver.Open(name); err == nil {
		s.writer, err = driver.Open(name)
	}
	if err != nil {
		if s.db != nil {
			_ = s.db.Close()
		}
		return nil, fmt.Errorf("sqlite: opening %s: %w", path, err)
	}
	s.writer.SetMaxOpenConns(1)
	if err = s.setUp(ctx); err == nil {
		err = s.prepare(ctx)
	}
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// resolve applies opts to the defaults.
func resolve(opts []Option) (settings, error) {
	var set settings
	for _, opt := range opts {
		opt(&set)
	}
	switch {
	case set.busyTimeout == 0:
		set.busyTimeout = DefaultBusyTimeout
	case set.busyTimeout < 0:
		set.busyTimeout = 0
	}
	if set.maxBytes <= 0 {
		set.maxBytes = storecodec.MaxBytes
	}
	switch set.synchronous {
	case "":
		set.synchronous = SyncNormal
	case SyncNormal, SyncFull:
	default:
		return set, fmt.Errorf("unknown synchronous level %q (use SyncNormal or SyncFull)", set.synchronous)
	}
	return set, nil
}

// prepare prepares the writer's statements.
func (s *Saver) prepare(ctx context.Context) error {
	for _, st := range []struct {
		stmt **sql.Stmt
		sql  string
	}{{&s.heads, sqlHeads}, {&s.insertCheckpoint, sqlInsertCheckpoint}, {&s.insertBlob, sqlInsertBlob}, {&s.putWrite, sqlPutWrite}} {
		var err error
		if *st.stmt, err = s.writer.PrepareContext(ctx, st.sql); err != nil {
			return s.errorf(err, "preparing a statement")
		}
	}
	return nil
}

// createFile creates path and its WAL index (path-shm) with mode 0600, and
// its directory with mode 0700, when they are missing, so that SQLite,
// which would create them readable by all, finds them. (The WAL file, which
// SQLite removes and makes again, takes the store's mode from the name's
// modeof parameter.)
func createFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	for _, name := range []string{path, path + "-shm"} {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// dsn is the driver's name for the file at path, an absolute path: a file:
// URI, where '?', '#' and '%' are escaped so that SQLite reads the name back
// as it is, and the connection's settings. Write transactions begin
// IMMEDIATE: a transaction that reads and then writes takes the lock before
// it reads, so it never fails half-way on a lock it cannot upgrade.
func dsn(path string, set settings) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", set.busyTimeout.Milliseconds()))
	q.Add("_pragma", fmt.Sprintf("synchronous(%s)", set.synchronous))
	q.Set("_txlock", "immediate")
	// The WAL file (and a rollback journal) take the store's mode, 0600.
	q.Set("modeof", path)
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows path: file:///C:/...
	}
	// SQLite decodes %XX in a URI's parameters but not '+': a space is %20
	// (Encode escapes a literal '+' as %2B).
	u := url.URL{Scheme: "file", Path: p, RawQuery: strings.ReplaceAll(q.Encode(), "+", "%20")}
	return u.String()
}

// Path returns the absolute path of the store's file.
func (s *Saver) Path() string { return s.path }

// DB returns the store's database, for an application that keeps tables of
// its own in the same file: their names must not start with deepgraph_,
// which are the store's. Its connections have the store's busy timeout and
// synchronous level, and its transactions begin IMMEDIATE unless they are
// read-only (sql.TxOptions.ReadOnly). Do not close it: Close does.
func (s *Saver) DB() *sql.DB { return s.db }

// Close closes the store, once the operations under way are done; later
// ones fail.
func (s *Saver) Close() error {
	if err := s.closeHandles(); err != nil {
		return fmt.Errorf("sqlite: closing %s: %w", s.path, err)
	}
	return nil
}

// errorf wraps err, which happened while doing what the format says, with
// the store's path and, for the SQLite errors a user can act on, what to do.
func (s *Saver) errorf(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	switch {
	case damaged(err):
		what += ": the file is damaged or is not a deepgraph store; move it aside and restore a copy, or use another path"
	case errors.Is(err, sqlite3.BUSY):
		what += fmt.Sprintf(": another connection or process held the file's lock for longer than the busy timeout (%s; sqlite.WithBusyTimeout)", s.busyTimeout)
	}
	return fmt.Errorf("sqlite: %s: %s: %w", s.path, what, err)
}

// damaged reports whether err is SQLite finding that the file is not a
// database or is corrupt.
func damaged(err error) bool {
	return errors.Is(err, sqlite3.NOTADB) || errors.Is(err, sqlite3.CORRUPT)
}
