// Package sqlite is deepgraph's embedded, durable graph.Checkpointer: one
// SQLite file that keeps every thread's checkpoints and task records, shared
// safely by the goroutines of a process and by several processes.
//
//	store, err := sqlite.Open(ctx, "runs.db")
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//	run, err := g.Compile(graph.WithCheckpointer(store))
//	…
//	out, err := run.Invoke(ctx, in, graph.Thread("report-1"))
//
// It uses github.com/ncruces/go-sqlite3, SQLite compiled to WebAssembly and
// translated to Go (wasm2go): no cgo, and a small download. Its database/sql
// driver is "sqlite3"; DB returns a handle on it.
//
// # The model
//
// The file is in WAL mode, so reads never wait for a writer. Each Put is one
// transaction: it reads the thread's newest checkpoint, applies the rule of
// graph.Checkpointer (the checkpoint's parent must still be the newest,
// except for a fork), stores the checkpoint and makes it the newest. Each
// PutWrites call is one transaction too, for all of its records: a record
// replaces an earlier one of the same task. Get reads a checkpoint and its
// records from one snapshot.
//
// Write transactions begin IMMEDIATE, taking the file's write lock before
// they read, and a Saver writes through one connection, so the writes of
// its goroutines queue in Go instead of polling SQLite's lock. Several processes may use one
// file: their transactions are serialized by SQLite's lock, a writer that
// finds it taken waits up to the busy timeout (WithBusyTimeout, 10s by
// default), and since each Put checks and moves the newest checkpoint under
// that lock, no update is lost: of two runs that continue the same
// checkpoint, one wins and the other gets a *graph.ConflictingCheckpointError.
// The file must be on a local file system: WAL needs shared memory between
// the processes, which network file systems do not provide.
//
// # Durability
//
// A Put or PutWrites that returned is stored. With the default synchronous
// level, SyncNormal, it survives a crash or a SIGKILL of the process, but the
// last transactions before a power loss or an operating-system crash may be
// rolled back — the file stays consistent. SyncFull (WithSynchronous) makes
// every commit survive a power loss too, at the cost of an fsync per commit.
//
// # The file
//
// Open creates the file (mode 0600) and its directory (mode 0700) if they are
// missing. The file is marked as deepgraph's with SQLite's application_id,
// and its schema version is kept in user_version: Open migrates an older
// file to this version of the schema, in one transaction, and refuses a
// newer one, which needs a newer deepgraph; processes that open a new file
// at once create its schema once. Open also refuses a file that is
// not an SQLite database and an SQLite database of another program, without
// changing it. Damage deeper in a file is reported when it is read.
//
// The tables are deepgraph_checkpoints, the checkpoints in the order they
// were stored — a thread's newest is its last, found through an index —
// and deepgraph_writes, the task records. Checkpoints and task records are
// stored as JSON documents in BLOB columns and decoded only into
// graph.Checkpoint and graph.TaskWrite, after their size is checked against
// WithMaxBytes: stored bytes are not trusted. The parent, step, source and
// creation time of each checkpoint are also columns of their own, for
// looking at a store with the sqlite3 shell (version 3.37 or later). An
// application may keep tables of its own in the same file through DB, with
// names that do not start with deepgraph_.
//
// A transaction that meets a database still locked by another process
// after the busy timeout (SQLITE_BUSY, SQLITE_LOCKED: see Transient) runs
// again with backoff, within the context's deadline (package retry).
package sqlite
