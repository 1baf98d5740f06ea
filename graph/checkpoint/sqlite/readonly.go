package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	sqlite3 "github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
)

// OpenReadOnly opens the existing store at path for reading only: Get,
// List and the tables of DB can be read; Put, PutWrites, the leases and
// the deletions fail with SQLite's "attempt to write a readonly database".
// It is for a store the process may not write — on a read-only file
// system, in a directory it may not write, or on a full disk — and for
// commands that only read. It creates nothing, changes nothing and
// migrates nothing: a store written by an older deepgraph that needs a
// migration is refused with an error saying to open it once writable.
//
// The file is opened with SQLite's mode=ro; when SQLite cannot do that —
// the WAL index (path-shm) is missing and cannot be made, or cannot grow on
// a full disk — it is opened as immutable, which reads the database file as
// it is and takes no locks: that is right for a store nobody is writing,
// which one on a read-only file system is; on a full disk, changes still in
// the WAL file of a process writing it now are not seen. Close the Saver
// when done.
func OpenReadOnly(ctx context.Context, path string, opts ...Option) (*Saver, error) {
	if path == "" || strings.ContainsRune(path, 0) {
		return nil, fmt.Errorf("sqlite: %q is not a file path: give the store's file, such as runs.db", path)
	}
	set, err := resolve(opts)
	if err != nil {
		return nil, fmt.Errorf("sqlite: opening %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: opening %s: %w", path, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("sqlite: opening %s to read it: %w", path, err)
	}
	s, err := openReadOnly(ctx, abs, set, false)
	if err != nil && (errors.Is(err, sqlite3.CANTOPEN) || errors.Is(err, sqlite3.READONLY) || errors.Is(err, sqlite3.IOERR)) {
		s, err = openReadOnly(ctx, abs, set, true)
	}
	return s, err
}

// openReadOnly opens abs with mode=ro, or immutable.
func openReadOnly(ctx context.Context, abs string, set settings, immutable bool) (*Saver, error) {
	name := dsn(abs, set) + "&mode=ro"
	if immutable {
		name += "&immutable=1"
	}
	db, err := driver.Open(name)
	if err != nil {
		return nil, fmt.Errorf("sqlite: opening %s: %w", abs, err)
	}
	// Readers and the writer share the handle: the writer's statements
	// are prepared, so that a write fails as SQLite refuses it rather
	// than on a missing statement.
	s := &Saver{path: abs, maxBytes: set.maxBytes, busyTimeout: set.busyTimeout, retry: set.retry, db: db, writer: db}
	if err := s.checkReadOnly(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// checkReadOnly refuses a file that is not a deepgraph store of this
// schema version.
func (s *Saver) checkReadOnly(ctx context.Context) error {
	id, err := identify(ctx, s.db)
	if err != nil {
		return s.notAStore(err)
	}
	if err := id.check(s.path); err != nil {
		return err
	}
	if id.version != len(migrations()) {
		return fmt.Errorf("sqlite: %s: the store was written by an older deepgraph (schema version %d; this one uses %d) and must be upgraded, which opening it read-only cannot do: open it once where it can be written", s.path, id.version, len(migrations()))
	}
	return nil
}

// closeHandles closes the store's handles (one when read-only).
func (s *Saver) closeHandles() error {
	if s.writer == s.db {
		return s.db.Close()
	}
	return errors.Join(s.writer.Close(), s.db.Close())
}
