package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// transientCodes are the SQLSTATEs after which the same statement, or
// transaction, may succeed when run again on a new connection.
var transientCodes = map[string]bool{
	"40001": true, // serialization_failure
	"40P01": true, // deadlock_detected
	"57P01": true, // admin_shutdown: the server is stopping or restarting
	"57P02": true, // crash_shutdown
	"57P03": true, // cannot_connect_now: the server is starting
	"53300": true, // too_many_connections
}

// Transient reports whether err is one a write or read of PostgreSQL may
// get past by trying again: a connection refused, reset or closed (the
// server restarted), a session ended by the administrator (SQLSTATE
// 57P01), a serialization failure (40001) or deadlock (40P01), a server
// starting up (57P03), or any connection exception (class 08). The end of
// a context is never transient; neither is an error of the statement
// itself (a constraint, a syntax error, a missing table).
//
// A transaction whose commit got a transient error may have committed:
// retry only what is idempotent, as the stores of deepgraph do (see
// package retry).
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return transientCodes[pgErr.Code] || (len(pgErr.Code) == 5 && pgErr.Code[:2] == "08")
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) || pgconn.SafeToRetry(err) {
		return true
	}
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed), errors.Is(err, pgconn.ErrConnClosed):
		return true
	}
	var netErr *net.OpError
	return errors.As(err, &netErr)
}
