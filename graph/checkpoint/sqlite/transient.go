package sqlite

import (
	"context"
	"errors"

	"github.com/ncruces/go-sqlite3"
)

// Transient reports whether err is one a write or read of SQLite may get
// past by trying again: the database is busy (SQLITE_BUSY, another
// connection or process holds the write lock past the busy timeout, or a
// WAL snapshot went stale) or a table is locked (SQLITE_LOCKED). The end of
// a context — which the driver reports as SQLITE_INTERRUPT — is never
// transient; neither is a full disk, a read-only file or a corrupt one.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return errors.Is(err, sqlite3.BUSY) || errors.Is(err, sqlite3.LOCKED)
}
