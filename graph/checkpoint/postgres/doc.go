// Package postgres is a graph.Checkpointer stored in PostgreSQL, for runs
// that must survive the process, be resumed on another machine, or be
// shared by several workers:
//
//	saver, err := postgres.Open(ctx, "postgres://app@db:5432/app", postgres.WithSchema("agents"))
//	if err != nil {
//		return err
//	}
//	defer saver.Close()
//	run, err := g.Compile(graph.WithCheckpointer(saver))
//
// Open makes a connection pool of its own; New works over a pgxpool.Pool the
// application already has, and Pool returns the pool in use, so that an
// application can keep its own tables next to the checkpoints, in one
// database.
//
// # Tables
//
// The tables go in the schema WithSchema names — created when missing — or
// else in the first schema of the connection's search_path (usually public).
// Their names start with deepgraph_:
//
//   - deepgraph_threads: one row per thread, with its newest checkpoint;
//   - deepgraph_checkpoints: one row per checkpoint, in insertion order
//     (seq), with its parent, step, time and source for queries of your own,
//     and the checkpoint itself as a JSON document in a bytea column;
//   - deepgraph_writes: the task records of a checkpoint's step, one row per
//     task, as JSON documents;
//   - deepgraph_schema: the version of the tables.
//
// Documents are stored as bytes, not jsonb, so that text jsonb refuses — a
// web page's "\u0000" — is kept as written. They are read back only into
// graph.Checkpoint and graph.TaskWrite, after their size is checked against
// WithMaxBytes and with unknown fields refused: a row changed behind the
// store's back gives an error naming its thread and checkpoint, never a
// panic. Thread names and checkpoint ids are PostgreSQL text, so they must be
// valid UTF-8 without NUL bytes.
//
// DeleteThread removes a thread's row, checkpoints and task records in one
// statement. Task records refer to their checkpoint without a foreign key,
// whose row lock would make the parallel tasks of a step queue on their
// checkpoint's row.
//
// # Concurrency
//
// Put is one transaction: it locks the thread's row (creating it first for a
// new thread), checks that the checkpoint's parent is still the thread's
// newest — or, for a fork, that the parent exists — inserts the checkpoint
// and makes it the newest. Writers of one thread therefore queue on its row:
// of several runs continuing the same checkpoint, from any number of
// processes, exactly one succeeds and the others get a
// *graph.ConflictingCheckpointError, never a serialization failure or a
// deadlock. Writers of different threads do not wait for each other.
// PutWrites stores all the records of a call in one statement, replacing a
// task's earlier record.
//
// # Durability and speed
//
// Each Put and each PutWrites is one commit, so with PostgreSQL's default
// synchronous_commit=on their time is mostly the server's flush of its
// write-ahead log to disk. Where losing the last moments of work to a crash
// of the server itself is acceptable, add synchronous_commit=off to the DSN
// (postgres://...?synchronous_commit=off): commits stay atomic and in
// order, runs stay safe from crashes of their own processes, and the flush
// happens in the background.
//
// # Restarts of the server
//
// Every method runs again, with backoff and within the context's deadline
// (package retry), when it fails with an error Transient reports: a
// connection refused, reset or closed by a restart, an administrator's
// shutdown of the session (SQLSTATE 57P01), a serialization failure or
// deadlock. Each is idempotent when run again: a Put whose commit took
// effect but whose reply was lost finds its checkpoint newest and succeeds.
// A restart of a few seconds loses no run.
//
// # Migrations
//
// Open and New bring the tables up to the version this package knows, in one
// transaction that holds an advisory lock on the schema, so that processes
// starting together do not race. A schema already at a newer version — made
// by a newer deepgraph — is refused with an error asking for an upgrade,
// rather than being written in a form that version may not read.
package postgres
