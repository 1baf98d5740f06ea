// Package retry runs a database operation again when it failed for a
// reason that passes — a connection cut by a server restart, an
// administrator's shutdown of the session, a serialization failure, a busy
// database file — with capped exponential backoff and full jitter, for as
// long as the context's deadline allows.
//
// The model: each store has one classifier of its driver's transient
// errors (postgres.Transient, sqlite.Transient) and wraps every write, and
// the reads where it is cheap, in Do. The operation must be idempotent or
// made so: an attempt whose commit was sent but whose reply was lost may
// have committed, so an attempt after the first (Attempt > 0) must accept
// finding its own earlier work done.
//
// The package imports only the standard library, like graph.
//
//	err := retry.Do(ctx, postgres.Transient, func(ctx context.Context, attempt int) error {
//		_, err := pool.Exec(ctx, `UPDATE jobs SET state = 'done' WHERE id = $1`, id)
//		return err // the same values again: idempotent
//	})
package retry
