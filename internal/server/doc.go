// Package server is research serve: the LangGraph Agent Server API over
// the run store, and the web page, all in one binary.
//
// # One API: the Agent Server API
//
// The server speaks the LangGraph Agent Server API (package agentserver)
// at its root, so that the web page, Agent Chat UI, the LangGraph SDKs and
// RemoteGraph drive the deep-search graph, as the assistant "research",
// the agent, as "agent", and the planning flow, as "flow".
// agentapi.go, agentapi_agent.go and agentapi_flow.go say how
// deepgraph's runs appear in its terms: the answer as the last ai message
// of the thread's values, the timeline and the cost as custom events, a
// query review or an agent's question as an interrupt (a HITLRequest). The
// assistants' metadata "deepgraph" says what a run's config.configurable
// may choose (efforts, back ends, models) and the server's version.
//
// Runs execute in the background: at most Options.MaxRunning at once,
// Options.QueueSize waiting, more refused with 429 and a Retry-After of one
// run's time at the rate runs have been ending (internal/drain).
//
// # The run store
//
// The API's threads and runs are kept in the run store, next to their
// checkpoints (agentstore.go): research runs lists them with their
// question, status, tokens and cost, and research show shows a research
// run's report. A run's stream is kept in memory while the server runs.
//
// # Stopping and starting
//
// Shutdown cancels the running runs: each keeps what it finished (the
// graph checkpoints every finished task) and is recorded as interrupted.
// Start runs anew the runs a stopped server left waiting and, with
// Options.ResumeInterrupted, continues those it left running (a run with
// input null on their threads: no finished task runs again).
//
// # Tracing
//
// With Options.Telemetry (research serve sets it up from OTEL_* and
// --trace), each API request is a server span "METHOD ROUTE"
// (http.request.method, http.route, http.response.status_code) that
// continues the caller's trace when the request carries a W3C
// traceparent. A run is a trace of its own — it outlives its request —
// whose root span "run KIND" links to the request that created it and
// records its status; its graph, model, search, page-read and tool spans
// nest below it, and it is counted in the deepgraph.runs metric.
//
// # Security
//
// The server listens on loopback unless told otherwise, and Check refuses
// any other address without a token. Every route but GET /ok needs the
// token (x-api-key or Authorization: Bearer); the page is open and asks
// for it. A loopback server answers only requests that name a loopback
// host (no DNS rebinding). Requests from another site's page are refused
// unless its origin is listed (no wildcard); bodies must be JSON (no form
// posts) and are bounded, as are questions. The page runs under a strict
// Content-Security-Policy and builds every piece of model or web text as
// DOM text, never as HTML. Refused requests are answered with Connection:
// close. research serve runs the handler with internal/httpserve's
// timeouts (headers, body, each write of a response, idle connections)
// and connection limits (in all and per client address).
package server
