// Package graph is a typed state-graph engine in the style of LangGraph:
// nodes read a typed state and return partial updates, edges and routers
// decide what runs next, Send fans work out to parallel tasks, and the engine
// runs it all in supersteps with per-field reducers, streaming, checkpoints,
// retries and timeouts. It imports nothing but the standard library, so it
// embeds in any Go pipeline.
//
// # State and reducers
//
// The state is a struct of yours. Each field that nodes write gets a typed
// handle that says how writes to it merge, declared once next to the type:
//
//	type State struct {
//		Question string
//		Queries  []string
//		Notes    []string
//		Loops    int
//		Done     bool
//	}
//
//	var (
//		Queries = graph.Append(func(s *State) *[]string { return &s.Queries }) // appends
//		Notes   = graph.Append(func(s *State) *[]string { return &s.Notes })
//		Loops   = graph.Value(func(s *State) *int { return &s.Loops })  // last value wins
//		Done    = graph.Value(func(s *State) *bool { return &s.Done })
//	)
//
//	g := graph.New[State](Queries, Notes, Loops, Done)
//
// Value fields keep the last write, Append fields append, and Reduce fields
// combine writes with a merge function of yours. A node returns only what it
// writes — graph.Writes(Done.Set(false), Notes.Add(n)) — so writing a zero
// value is as explicit as writing any other: there is no "unset" to confuse
// it with. Set on any handle replaces the value outright, bypassing the
// reducer (use it to reset a list for a new round). The accessor functions
// are how the engine reaches fields: no reflection happens per step.
//
// # Input
//
// A run's input is written like a node's update, through the reducers, as
// if from Start (LangGraph's input): onto the zero state for a new run or
// thread, onto the last state of a thread whose previous run finished. The
// input struct writes its non-zero fields — a zero field is "not given" and
// leaves the thread's value as it was — and InputWrites adds writes that
// say what a struct cannot: graph.InputWrites(Done.Set(false)) writes a zero
// value, Queries.Set(nil) empties a list. A Reduce field thus sees its merge
// function run on the input of every run, new thread or not. On a
// continuing thread, InputWrites is the way to write an input: every write
// counts, zero values included. DecodeWrites reads such writes from a JSON
// object of field values, where a key that is present is written
// (LangGraph's input dict).
//
// # Nodes, edges and routing
//
// AddNode adds a function of the state. AddTask adds a task node whose input
// is the Arg of a Send instead of the state — the map in map-reduce; its
// payload type is a type parameter, checked by the Go compiler for AddFanOut
// and by Compile and the run for everything else. AddEdge, AddSequence,
// AddJoin (run once after all of several nodes), AddConditional (a Router
// returning node names and/or Sends among declared destinations) and
// AddFanOut connect them; Start and End are the entry and exit. A node can
// also route itself by returning a Command: Writes(...).Goto("next") or
// .Send(...). A compiled graph can be a node of another graph: AddSubgraph
// for the same state type, AddMappedSubgraph for another. A node inside a
// subgraph can hand control back to its parent with ToParent: the parent
// applies the update as the subgraph node's own and follows its Goto. A
// node added with Defer waits, when routed to, until no other branch has
// work left, then runs once (LangGraph's defer=True).
//
// Compile checks the whole graph and reports every problem at once, each
// naming its offender: unknown nodes in edges, nodes unreachable from Start,
// nodes with no way out, duplicate or reserved names, Sends to nodes that are
// not task nodes, fan-out payload types that do not match the task.
//
// # Supersteps and determinism
//
// A run proceeds in steps. All tasks of a step run concurrently — at most
// DefaultMaxConcurrency (64) at once unless WithMaxConcurrency or
// MaxConcurrency says otherwise; a negative bound is none — on the state as
// it was when the step began; when they have all finished, their updates are
// merged in task order — the order in which they were scheduled, not the
// order in which they finished — and the routers of the nodes that ran pick
// the next step's tasks from the merged state. So a run's result does not
// depend on timing, and a node reached from several parallel branches in one
// step runs once. Two tasks of one step setting the same field is an error
// (*ConflictError) naming both. A task that Sets a field decides its value
// for the step, as LangGraph's Overwrite does: its own writes to the field
// apply in its order, and the other tasks' writes to that field in the same
// step are dropped — so the outcome does not depend on which task comes
// first, that is, on the order in which edges were declared.
//
// # Limits, failures and policies
//
// A run may take at most its recursion limit of steps (DefaultRecursionLimit,
// WithRecursionLimit, RecursionLimit); beyond it the run fails with a
// *RecursionError. The limit counts the steps of one invocation — Invoke,
// Stream, or each Resume — as LangGraph's does: a thread that loops through
// a human's answer thirty times is thirty short runs, and a run stopped by
// the limit resumes with the same limit or a higher one and goes on. A failing node cancels the rest of its step and fails the
// run with a *NodeError naming the node and the step; errors.Is and errors.As
// see the node's own error through it. A panic in a node becomes a
// *PanicError with the stack. Cancelling the context stops the run: nodes get
// the context and should honour it. WithRetry and WithTimeout set policies
// per node, WithNodeDefaults for the whole graph; a RetryPolicy's zero
// InitialInterval retries without waiting. Invoke returns, with an error, the state
// as of the last completed step.
//
// # Node cache
//
// A node with a cache policy (WithCachePolicy, LangGraph's CachePolicy)
// runs once per key of its input — the state for AddNode, the payload for
// AddTask, keyed by the SHA-256 of its JSON unless the policy's Key says
// otherwise — for the policy's TTL: a later task on an input with the same
// key takes the stored update and the node does not run. The results live
// in the graph's Cache (WithCache; MemoryCache in memory, or your own over
// a database); Compiled.ClearCache forgets them. A reused task has no
// EventTaskStart, and its EventTaskEnd and its record in the checkpointer
// (TaskState.Cached) say Cached. Failures and interrupts are not cached; a
// task resuming with answers to its interrupts runs. A run with a
// TaskRunner (and so graph/temporalgraph) refuses a graph with cache
// policies.
//
// # Streaming
//
// Stream yields Events as the run goes: the state the run starts from (an
// EventStep with Step 0: the input, merged), task starts and ends (with each
// task's update), the state after each step, values nodes publish with Emit
// (LLM tokens travel this way), and the end. It is an iter.Seq2; breaking out
// of the loop cancels the run and returns once every task has stopped.
// A subgraph's nodes' Emit values reach it; with StreamSubgraphs (LangGraph's
// subgraphs=True) the subgraph's steps, tasks and interrupts do too, each
// event naming the subgraph's run in its Namespace ("node:task-id", the
// checkpoint namespace below; a subgraph over another state type sends its
// state and updates in Event.Untyped). A graph a node runs itself — Invoke,
// or Stream, whose events then go to the node and up the run's stream —
// is such a subgraph. In a checkpointed run each EventStep names the
// checkpoint its state is stored as (Event.Checkpoint, a StepCheckpoint), a
// subgraph's with the checkpoints of the runs above it. A task run by a
// TaskRunner passes up only its subgraphs' Emit values.
//
// # Checkpoints
//
// With a Checkpointer (WithCheckpointer) and a Thread, the run stores its
// state after every step and each task's update as the task finishes, as
// JSON decoded only into your own types. Resume continues a thread after a
// failure, re-running only the tasks that had not finished; Invoke on a
// thread whose last run finished continues from that run's state, merging the
// new input through the reducers. State shows a thread's newest checkpoint
// with the writes of the tasks that finished before the run stopped already
// applied, as LangGraph's get_state does. History lists a thread's
// checkpoints, each with its parent and its pending step's tasks: their
// updates, their errors and every interrupt they raised with its answer and
// times — an audit of the thread, and the IDs to fork from
// (Thread(id).At(checkpoint)). MemorySaver is the in-memory store; the
// interface is what durable stores implement.
//
// When the writes happen is the run's durability (WithDurability,
// Durability; LangGraph's durability): DurabilitySync, the default, stores
// each step before the next starts; DurabilityAsync stores it while the
// next step runs, everything being stored before the run returns;
// DurabilityExit stores only when the run returns — finished, paused or
// failed — its last checkpoint with its pending step's records, so Resume
// works the same, while a crash loses the run.
//
// A subgraph run by a task of a checkpointed run — AddSubgraph,
// AddMappedSubgraph, or a node calling Invoke on another compiled graph
// without a Thread of its own — checkpoints in the parent's thread under a
// namespace of its own, "node:task-id" (nested: "outer:id|inner:id"),
// LangGraph's checkpoint_ns. When the task runs again — a Resume after an
// interrupt inside the subgraph, a Resume or a retry after a failure in it
// — the subgraph continues its namespace's newest checkpoint, so its inner
// nodes that finished are not run again. TaskState.Subgraphs names a task's
// namespaces; State and History read one with Thread(id).In(ns), on the
// subgraph compiled with the same store. A task run by a TaskRunner runs
// its subgraphs whole, as before.
//
// # One run per thread
//
// A run owns its thread while it runs: before it reads or writes anything
// of the thread it takes a lease (Checkpointer.TakeThread), renews it while
// it runs (WithLease) and releases it when it ends, paused, failed or done.
// A second run on a busy thread is refused at once with a
// *ThreadBusyError (errors.Is ErrThreadBusy), having written nothing, so
// no input is ever half-applied and a caller may retry it as it is. OnBusy
// chooses otherwise: BusyEnqueue waits for the thread, BusyInterrupt stops
// the running run (it ends with ErrRunStopped, its progress stored) and
// goes, BusyRollback also deletes the stopped run's checkpoints — LangGraph's
// multitask strategies. The store refuses the writes of any other run than
// the holder, so a run whose lease expired while it stalled cannot
// overwrite the work of the run that took its thread over. DeleteThread
// deletes a thread, refusing a busy one or stopping its run first.
//
// # Tracing
//
// A Tracer attached to a context with ContextWithTracer observes every run
// under it: the run, each superstep and each task attempt (node, step,
// Send, attempt number, the previous attempt's error). Each observation
// hands the work a context of its own, so nested runs — subgraphs, graphs
// a node invokes, Send fan-outs — nest in one trace. deepgraph's telemetry
// package implements it with OpenTelemetry spans; the engine itself imports
// no tracing library, and without a Tracer it does one context lookup per
// run and nothing per task.
package graph
