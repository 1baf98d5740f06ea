// Package server is research serve: an HTTP API over the run store, shaped
// after the LangGraph server's resources, a queue that executes runs in the
// background, and the web page, all in one binary.
//
// # Resources
//
// Threads are conversations; runs are questions (research) or tasks (agent)
// on a thread, executed by the queue: at most Options.MaxRunning at once,
// Options.QueueSize waiting, more refused with 429 and a Retry-After of one
// run's time at the rate runs have been leaving the queue (internal/drain). A run
// that pauses for a person (a query review, an agent's question) waits with
// status needs-input until POST …/resume brings the answer. GET
// /openapi.json is an OpenAPI 3.1 document generated from the route table
// and the Go types of the bodies, so it says what the handlers do.
//
// # The LangGraph Agent Server API
//
// Under AgentAPIPrefix (/lg) the server speaks the LangGraph Agent Server
// API (package agentserver), so that Agent Chat UI, the LangGraph SDKs and
// RemoteGraph drive the deep-search graph, as the assistant "research", and
// the agent, as "agent" (agentapi.go and agentapi_agent.go say how deepgraph's runs appear in its terms: the answer as
// the last ai message, the timeline and the cost as custom events, a
// review as a HITLRequest interrupt). Its threads and checkpoints are in
// the same checkpointer as the API below; its runs are not in the run
// store yet, and the page still uses the API below: moving the page onto
// it, for one API, is what remains of issue 27.
//
// # Events
//
// Every run keeps an event log (runstore): status, activity (the timeline
// lines the CLI prints, with elapsed time and tokens), token (the answer as
// it is written), state (after each step), interrupt, report, error and
// end. GET …/runs/{id}/stream sends it as Server-Sent Events: the stored
// events after Last-Event-ID, then the new ones live, so a client that
// joins late or reconnects misses nothing. Events are kept in memory for
// the live streams and stored as they happen — answer tokens in batches of
// up to 100 ms — and ids only grow: after a crash they jump past any id a
// client may have seen but the store had not.
//
// # Stopping and starting
//
// Shutdown cancels the running runs: each stores what it finished (the
// graph checkpoints every finished task) and is recorded as interrupted.
// Start queues again the runs a stopped server left queued and, with
// Options.ResumeInterrupted, those it left running; a resumed run repeats
// no finished model call or search.
//
// # Tracing
//
// With Options.Telemetry (research serve sets it up from OTEL_* and
// --trace), each API request is a server span "METHOD ROUTE"
// (http.request.method, http.route, http.response.status_code) that
// continues the caller's trace when the request carries a W3C
// traceparent. A run is a trace of its own — it runs in the queue after
// its request has been answered — whose root span "run KIND" links to the
// request that queued it; its graph, model, search, page-read and tool
// spans nest below it.
//
// # Security
//
// The server listens on loopback unless told otherwise, and Check refuses
// any other address without a token. A loopback server answers only
// requests that name a loopback host (no DNS rebinding). Requests from
// another site's page are refused unless its origin is listed (no
// wildcard); bodies must be JSON (no form posts) and are bounded, as are
// questions. The page runs under a strict Content-Security-Policy and
// builds every piece of model or web text as DOM text, never as HTML.
// Refused requests are answered with Connection: close. research serve runs
// the handler with internal/httpserve's timeouts (headers, body, each
// write of a response, idle connections) and connection limits (in all
// and per client address), which keep /healthz answering when clients
// hold connections open.
package server
