package runstore

import (
	"context"

	"github.com/deepgraph/deepgraph/graph/checkpoint/retry"
)

// retryDB runs the statements and transactions of a sqlDB again while
// they fail with an error its driver's classifier (transient) calls
// transient — a connection cut by a restart of PostgreSQL, its
// administrator's shutdown of the session (57P01), a serialization
// failure, a busy SQLite file — with the backoff of package retry, within
// the context's deadline.
//
// A transaction whose commit's reply was lost may have committed, so each
// write is idempotent when run again: a transaction sees, through
// retried, that it is an attempt after the first, and accepts finding its
// own earlier work (Create, CreateThread, SetThreadData); the deletions
// report a run or thread already gone as deleted; Update and the upserts
// write the same values again. Queries are retried through read, never
// inside a transaction (whose failure ends it: the whole transaction runs
// again).
type retryDB struct {
	sqlDB
	transient func(error) bool
}

func (d retryDB) exec(ctx context.Context, query string, args ...any) (n int64, err error) {
	err = retry.Do(ctx, d.transient, func(ctx context.Context, _ int) error {
		n, err = d.sqlDB.exec(ctx, query, args...)
		return err
	})
	return n, err
}

func (d retryDB) tx(ctx context.Context, fn func(sqlConn) error) error {
	return retry.Do(ctx, d.transient, func(ctx context.Context, attempt int) error {
		return d.sqlDB.tx(ctx, func(c sqlConn) error { return fn(attemptConn{c, attempt}) })
	})
}

func (d retryDB) inTx(ctx context.Context, fn func(sqlConn) error) error {
	return retry.Do(ctx, d.transient, func(ctx context.Context, attempt int) error {
		return d.sqlDB.inTx(ctx, func(c sqlConn) error { return fn(attemptConn{c, attempt}) })
	})
}

// read runs fn, which only reads, again while it fails with a transient
// error.
func (d retryDB) read(ctx context.Context, fn func(sqlConn) error) error {
	return retry.Do(ctx, d.transient, func(ctx context.Context, _ int) error { return fn(d.sqlDB) })
}

// attemptConn is a transaction that knows which attempt it is.
type attemptConn struct {
	sqlConn
	attempt int
}

// retried reports whether c is a transaction run again after a transient
// failure, which may have committed.
func retried(c sqlConn) bool {
	a, ok := c.(attemptConn)
	return ok && a.attempt > 0
}
