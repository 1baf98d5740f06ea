// Package agentserver serves graphs built with package graph over the
// LangGraph Agent Server API — the HTTP API of LangGraph's own server — so
// that the clients people already use for LangGraph talk to a Go program:
// LangChain's Agent Chat UI, the @langchain/langgraph-sdk JS client and its
// React useStream hook, the Python langgraph-sdk and RemoteGraph.
//
//	cp := graph.NewMemorySaver() // or graph/checkpoint/sqlite, postgres
//	run, _ := g.Compile(graph.WithCheckpointer(cp))
//	srv, _ := agentserver.New(agentserver.Options{Checkpointer: cp})
//	srv.Serve("agent", agentserver.Compiled(run))
//	http.ListenAndServe("127.0.0.1:2024", srv.Handler())
//
// # Why a public package
//
// It is public, not internal to research serve, because serving one's own
// graph to those clients is the reason a Go user would pick this engine
// over writing a server: research serve is one user of it (the deep-search
// graph, the agent and the flow), and a program that compiles its own graph
// is another. It imports package graph and nothing else of ours, so
// embedding it pulls in no model provider.
//
// # What it serves
//
//   - GET /ok, GET /info;
//   - assistants: one per served graph, with LangGraph's ID for it
//     (AssistantID: the UUID v5 of the graph id), metadata.created_by
//     "system": POST /assistants/search and /count, GET /assistants/{id}
//     (an assistant id or a graph id), …/graph (nodes and edges of the
//     compiled graph), …/schemas (JSON Schema of the state type);
//   - threads: POST /threads (a client's thread_id and if_exists), GET,
//     PATCH (metadata), DELETE /threads/{id}, POST /threads/search and
//     /count (ids, metadata, values and status filters, sort, paging with
//     X-Pagination-Total and X-Pagination-Next), GET /threads/{id}/state
//     and …/state/{checkpoint_id}, POST …/state/checkpoint, POST …/state
//     (update_state with as_node), POST …/history (ThreadState list with
//     checkpoint, parent_checkpoint and tasks[].interrupts, before and
//     metadata filters);
//   - runs: POST /threads/{id}/runs/stream (Server-Sent Events), …/runs/wait,
//     …/runs (background), and the stateless /runs/stream, /runs/wait, /runs
//     (a thread of their own, deleted after the run unless on_completion is
//     keep); GET /threads/{id}/runs, GET and DELETE …/runs/{run_id},
//     …/join, …/stream (join the stream; Last-Event-ID resumes after an
//     event, -1 replays it all), POST …/cancel (action interrupt or
//     rollback, wait).
//
// A run's body is LangGraph's: input (decoded into the state's fields by
// their JSON names, graph.Compiled.DecodeWrites), command (resume — one
// value, or interrupt ids to values —, update, goto), checkpoint or
// checkpoint_id (run from a past checkpoint: a fork), interrupt_before and
// interrupt_after, config.recursion_limit, config.configurable and context
// (given to Build), metadata, stream_mode, multitask_strategy (reject — 409
// on a busy thread —, enqueue, interrupt, rollback), on_disconnect (cancel,
// the default of /runs/stream, or continue), on_completion, if_not_exists,
// durability (sync, the default; async; exit: graph.DurabilityMode).
//
// A run with input null (or none) and no command continues its thread, as
// LangGraph's does: when the newest checkpoint has pending tasks (a run
// cancelled, stopped by a shutdown or failed), only the tasks that had not
// finished run, then the rest of the graph (graph.Compiled.ResumeStream);
// breakpoints are released. When a pending task waits for an answer (an
// interrupt), the run is refused with 422: send command.resume. With
// nothing pending the graph runs again from its start on the thread's
// state. With checkpoint_id, the run starts from that checkpoint as before.
//
// # Streams
//
// The first event is metadata {run_id, thread_id, attempt}, then the modes
// asked for: values (the state after each step; on an interrupt the state
// with "__interrupt__": [{id, value}]), updates ({node: what it wrote}),
// messages-tuple (event "messages": [chunk, metadata], from the
// MessageChunk values a node emits with graph.Emit), custom (any other
// emitted value, and what Observe adds), tasks, checkpoints and debug; a
// run that fails ends with error {error, message}. With stream_subgraphs
// the events of the graph's subgraphs come too, as LangGraph's server sends
// them: named "mode|namespace" — updates|research:<task id> with the inner
// node's update, values|… with the subgraph's own state (of its own type
// for a mapped subgraph), tasks|…, debug|…, messages|… (checkpoint_ns in
// their metadata), custom|…, checkpoints|… (each checkpoint of the
// subgraph: its values, next, tasks, config with its checkpoint_ns and the
// checkpoint_map of the runs above it, parent_config, metadata with
// parents), and updates|… with "__interrupt__" when it stops at an
// interrupt; the namespace, "node:task-id" joined by "|" when subgraphs
// nest, is the subgraph's checkpoint_ns (graph.StreamSubgraphs). A graph a
// node runs itself (Invoke, or Stream, inside the node) is such a
// subgraph. Without it a subgraph's messages and custom events come as the
// run's own, and nothing else of it. Events have ids; every
// run-creating response carries Content-Location (the run's path), stream
// responses Location (where to rejoin), and quiet streams a heartbeat
// comment every Options.Heartbeat.
//
// # Messages
//
// Clients render a state's "messages" key of LangChain message dicts:
// Message is one, AddMessages is LangGraph's add_messages reducer (append,
// or replace by id) for any state, and a node that streams a reply emits
// MessageChunk values with the ID of the message it then writes, so that
// the clients put the message in place of its chunks.
//
// # Security
//
// With Options.Token, every route but /ok needs the token as x-api-key or
// Authorization: Bearer; a request from another site's page is refused unless its
// Origin is listed in Options.CORSOrigins (no wildcard); CORS exposes
// Content-Location and Location; a loopback server answers only requests
// naming a loopback host; bodies are JSON (application/json, or text/plain
// as Studio sends it — never a form) and bounded by Options.MaxBody; the
// threads kept are bounded by Options.MaxThreads, and the runs executing
// and waiting by Options.MaxRunning and Options.MaxQueued (429 beyond).
//
// # Threads and runs kept
//
// A thread's state is in the checkpointer; its record (metadata, status,
// graph) and its runs' (status, metadata, request) are in Options.Store,
// which New reads and the server writes through: a MemoryStore by
// default, or a durable Store of the program's — research serve keeps
// them in its run store, next to its checkpoints, so that its runs are
// listed by research runs. A restarted server lists the threads of the one
// before and their runs; a run it left pending or running is interrupted,
// and a run with input null continues it — ResumeRuns does it for all of
// them at start, and runs anew those left pending. A run's stream is not
// kept: joining the stream of a run of the server before ends at once with
// what is left of it — metadata, the values of the run's last checkpoint
// (with __interrupt__ when it paused) and its error when it failed — and
// …/join answers those values. Threads of stateless runs are not kept.
//
// # Tracing
//
// Options.Route wraps each route's handler, named by its pattern (a server
// span per request); a run's context carries its request's values, and
// RunSetup.Context and RunSetup.End let Build run it in a trace of its own
// and record how it ended.
//
// # Not served (yet)
//
// Not served: the store (/store), crons (as LangGraph's
// JS server), assistant creation and versions, the events stream mode
// (LangChain's astream_events), the legacy messages stream mode (messages
// is read as messages-tuple).
package agentserver
