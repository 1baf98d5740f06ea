// Package runstore is the registry of the research command's runs: one
// record per run of `research "question"` or `research agent "task"`, kept
// next to the run's graph checkpoints in the same database, so that runs can
// be listed, shown, removed, pruned and resumed.
//
// # The model
//
// A Run is created by the process that starts it (status running, with its
// host and pid) — or by a server that queues it (status queued, until a
// worker takes it up and marks it running) — updated by that process after
// every step (tokens, model calls) and when it stops: done with its report,
// failed with why, interrupted, or needs-input when it waits for a human's
// answers. Resuming
// a run, in the same or another process, updates the same record back to
// running with the new process's host and pid. The run's progress itself —
// the graph state — is in the checkpoints of its Thread; a follow-up
// question starts a new run on the thread of an earlier one, so one thread
// may have several runs (ThreadRuns).
//
// A Thread is the record of such a conversation: Create records the thread
// of every new run (its kind and title from its first run, Updated when its
// newest run started), and a server can create one before its first run
// (CreateThread), keep a JSON document of its own with it (Thread.Data,
// SetThreadData), list the conversations newest first (ListThreads) and
// remove one with all its runs (DeleteThread). Deleting a thread's last run
// leaves the thread; Prune removes the threads whose runs it removed all of.
//
// A run may have recorded calls: the results of the external calls it
// paid for — searches, page reads — kept under a key naming the call
// (RecordCall) before the run uses them, so that a resumed run serves them
// from the store (Call) instead of paying for them twice. They go with
// their run: Delete, DeleteThread and Prune remove them.
//
// A process that takes a run up — resuming it, or a worker starting a
// queued run — claims it (Claim): the update happens only if the run is
// still as the process read it, so of two resumes started together one
// runs and the other is refused before it does anything.
//
// The stored status is what the process last wrote; a process that is
// killed or crashes cannot write "interrupted". Effective corrects that when
// reading: a run stored as running whose process is gone (Alive: its pid no
// longer exists on this machine) is interrupted, and so is a run of another
// machine, whose process cannot be checked, that has not been updated for
// StaleAfter. A queued run has no process yet and stays queued. Commands
// that show a status should show Effective's; Prune removes only runs that
// are neither running by that measure nor queued.
//
// Run ids are 8 random characters (NewID); Get also accepts a unique prefix
// of at least MinPrefix characters, like git.
//
// # Stores
//
// OpenSQLite and OpenPostgres keep the runs in the database of the
// checkpoint store, in tables of their own (the checkpoint store's start
// with deepgraph_):
//
//   - research_runs: one row per run; times in UTC to the microsecond;
//     Settings and Report as JSON bytes, verbatim; indexed by started time
//     (List) and by thread (ThreadRuns);
//   - research_threads: one row per thread, indexed by updated time
//     (ListThreads), with the application's Data as JSON bytes, verbatim;
//   - research_run_calls: one row per recorded call, keyed by run id and
//     key; data as JSON bytes, verbatim;
//   - research_runs_meta: key/value rows, with schema_version, the version of
//     the tables, for migrations.
//
// The tables are created when missing, in one transaction that serializes
// processes opening the store together (SQLite's write lock, a PostgreSQL
// advisory lock). The same transaction upgrades tables of an older version:
// those of version 1, which had research_runs only, get the other tables
// and a thread row for each thread of their runs; those of version 2 get
// research_runs.cost_usd (Run.Cost), NULL — unknown — for the runs stored
// before; those of version 3 get research_run_calls; those of version 4
// get research_threads.data, NULL (no data), and lose research_run_events
// (the event log of research serve's first API). Tables at a newer version
// — made by a newer deepgraph — are refused with an error asking for an
// upgrade.
//
// Both stores behave the same: ids are compared byte by byte (also by
// prefix), List orders by Started then ID, newest first (ListThreads by
// Updated then ID), and List,
// ThreadRuns and Prune return runs without Settings and Report, which can be
// large: Get returns a whole run. Settings and Report are limited to
// MaxDocumentBytes when written, and a stored one over the limit is refused
// when read (ErrTooLarge) before it is loaded.
package runstore
