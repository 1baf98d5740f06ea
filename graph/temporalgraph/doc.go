// Package temporalgraph runs a compiled graph as a durable Temporal
// workflow, so that runs survive lost workers and spread over many machines,
// on infrastructure the user operates (go.temporal.io/sdk).
//
// The engine's own loop runs inside the workflow: it plans each step, calls
// the routers, merges the updates in task order through the reducers and
// checks the recursion limit, exactly as in-process (graph.WithTaskRunner),
// so a run ends in the same state as Invoke on the same inputs. Each task —
// a node, or one Send of a fan-out — runs as an activity, and a step's tasks
// run as parallel activities. A node's retry policy becomes its activity's
// retry policy (attempts, backoff), plus Options.InfraRetries attempts for
// failures that are not the node's, such as a worker that died; its timeout
// becomes a start-to-close timeout a little longer than the timeout the
// worker enforces. Running tasks heartbeat every Options.Heartbeat, so a
// lost worker's task runs again elsewhere after three missed beats, and a
// cancelled run cancels its tasks. What finished is in the history and is
// never run again.
//
// State, Send payloads and updates travel as the engine's typed JSON. A
// research run's state grows past what Temporal accepts in one payload;
// Codec compresses large payloads and moves the largest into a BlobStore
// (DirStore, a directory every process shares), leaving a reference. The
// workflow encodes the state once per step, on its own goroutine: at tens
// of megabytes that can outlast the SDK's deadlock detector (one second by
// default), so raise worker.Options.DeadlockDetectionTimeout for such
// graphs.
//
// A node that calls graph.Interrupt stops its task; the run lists the
// interrupt in its progress and waits for an answer, sent with Run.Answer
// (a Temporal Update, which refuses an answer to no pending interrupt) or
// as the SignalAnswer signal. The task then runs again with the answer,
// while the rest of the step goes on; an answer the node refuses (not of
// the type it asked for) is set aside, the timeline says so
// (KindAnswerRejected), and the interrupt waits again. Static breakpoints
// (graph.WithInterruptBefore/After) are refused: use graph.Interrupt.
//
// Three features of the engine's checkpointed runs do not apply here, as
// Temporal's history is the run's record: durability modes
// (graph.Durability, graph.WithDurability) have no effect — every task's
// result is in the history as it finishes; a subgraph node is one activity
// with no checkpoint namespace of its own, so when a node inside it asks
// (graph.Interrupt) and is answered, the activity runs the subgraph again
// from its start and its inner nodes that had finished run again — make
// such inner nodes nodes of the parent graph, or keep them cheap; and the
// engine's compact checkpoints are not used (Codec keeps large states
// small in the history). A checkpointer the graph was compiled with
// (graph.WithCheckpointer) is not written to by a run on Temporal.
//
// The node cache (graph.WithCachePolicy) is refused: New fails for a graph
// with cache policies, since the workflow must not read a cache.
//
// A Command to the parent graph (graph.ToParent) from a node inside a
// subgraph works as in-process: the subgraph runs inside its node's
// activity, whose result is the Command's update, routed in the parent.
//
// Deferred nodes (graph.Defer) work as in-process: the engine's loop in
// the workflow plans them.
//
// Progress — the step, the tasks in flight, the timeline and the pending
// interrupts — is a query (QueryProgress, Run.Progress); Run.Follow streams
// the timeline to a terminal. Options.Progress decides what the timeline
// says about each task.
//
// # Versioning
//
// Temporal replays a workflow's history through the current code to rebuild
// its state, so the code that runs in the workflow must make the same
// decisions for a run that has started. Here, that code is the graph's
// shape and logic: its nodes, edges, routers, fan-outs and reducers. The
// rule:
//
//   - A change to node bodies — prompts, models, tools, parsing — is free:
//     tasks are activities, and their recorded results are not recomputed.
//     Keep each node's update compatible (the fields it writes).
//   - A change to what the workflow decides — adding, removing or renaming a
//     node or an edge, changing a router, a fan-out or a reducer — takes a
//     new Options.Version. The version is part of the workflow type
//     (WorkflowName: "name@version"): register the old and the new Graph on
//     the workers until the old version's runs have finished; new runs start
//     on the new one.
//
// As a guard, each run records its graph's Fingerprint (a hash of its nodes
// and edges as Mermaid draws them) when it starts. A worker whose graph has
// another fingerprint under the same version does not go on with the run:
// its workflow task fails with a message naming the rule, and the run waits,
// unharmed, for a worker with the right graph. The adapter's own workflow
// logic is versioned with workflow.GetVersion ("deepgraph.engine").
package temporalgraph
