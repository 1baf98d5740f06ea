package app

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	sqlite3 "github.com/ncruces/go-sqlite3"
)

// ErrStoreUnwritable matches the error of a run store that cannot be
// written — its disk is full, or it is read-only (*StoreError). The CLI
// exits with its own status on it (docs/cli.md): at open nothing was paid
// for; during a run, the report was printed but the run was not kept.
var ErrStoreUnwritable = errors.New("the run store cannot be written")

// StoreError is a run store that cannot be written: Full when its disk
// (or its database's quota) is full, read-only otherwise. It names the
// store and says what to do.
type StoreError struct {
	Where string // the store, fit to print
	Full  bool
	// Free is the space left on the store's file system in bytes, -1 when
	// unknown (a PostgreSQL store, or a system that cannot say).
	Free int64
	Err  error
}

func (e *StoreError) Error() string {
	if e.Full {
		free := ""
		if e.Free >= 0 {
			free = fmt.Sprintf(", %s free", bytesText(e.Free))
		}
		return fmt.Sprintf("the run store %s cannot be written: its disk is full (%v%s); free space there, set --store to a file on another disk, or --no-save to keep nothing", e.Where, e.Err, free)
	}
	return fmt.Sprintf("the run store %s is read-only (%v); make it writable, set --store to a file that can be written, or --no-save to keep nothing (research runs and research show can still read it)", e.Where, e.Err)
}

func (e *StoreError) Unwrap() []error { return []error{ErrStoreUnwritable, e.Err} }

// bytesText writes a size in bytes for people: "0 B", "12 KiB", "3 MiB".
func bytesText(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// classifyStoreErr returns err as a *StoreError when it says that the
// store where, kept in the file path ("" for PostgreSQL), cannot be
// written — a full disk or a read-only one — and nil otherwise.
func classifyStoreErr(where, path string, err error) *StoreError {
	if err == nil {
		return nil
	}
	free := int64(-1)
	dir := ""
	if path != "" {
		dir = filepath.Dir(path)
		free = freeBytes(dir)
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case "53100": // disk_full
			return &StoreError{Where: where, Full: true, Free: -1, Err: err}
		case "25006": // read_only_sql_transaction: a standby, or default_transaction_read_only
			return &StoreError{Where: where, Free: -1, Err: err}
		}
		return nil
	}
	switch {
	case errors.Is(err, sqlite3.FULL), errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return &StoreError{Where: where, Full: true, Free: free, Err: err}
	case errors.Is(err, sqlite3.IOERR) && free == 0:
		// SQLite's I/O error on a file system with no space left (the
		// WAL index cannot grow: "disk I/O error (4874)").
		return &StoreError{Where: where, Full: true, Free: free, Err: err}
	case errors.Is(err, syscall.EROFS), errors.Is(err, sqlite3.READONLY),
		errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return &StoreError{Where: where, Free: free, Err: err}
	case errors.Is(err, sqlite3.CANTOPEN) && dir != "" && !writable(dir):
		return &StoreError{Where: where, Free: free, Err: err}
	}
	return nil
}
