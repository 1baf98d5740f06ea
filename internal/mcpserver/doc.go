// Package mcpserver serves deepgraph to MCP clients (Claude Desktop, IDEs,
// agents): it builds the Model Context Protocol server of `research mcp`
// with the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// The server, "deepgraph", offers three tools, and a fourth when enabled:
//
//   - deep_research {question, effort}: a full deep-search run. Its result
//     is the cited report in Markdown (research.Report.Markdown: the answer
//     with numbered [n](url) citations, then the Sources list), and the same
//     as structured content (ResearchOutput). While it runs, a client that
//     sent a progress token gets one progress notification per timeline line
//     — the lines the CLI prints (app.ActivityLine): the queries, each
//     search, each reflection, the answer. Cancelling the call (or the
//     client going away) cancels the run's context.
//
//   - web_search {query, max_results, time_range} and fetch_page {url,
//     offset}: the agent's own tools (tools.NewWebSearch,
//     tools.NewFetchPage), offered as they are — same schema, same text —
//     with a failed tools.Result as a tool error. fetch_page reads through
//     the page reader it is given, behind its SSRF guard. web_search is
//     offered only with a searcher (a search provider or a corpus); the
//     server's instructions say when it is not.
//
//   - browser {action, …}: offered only when enabled (Options.Browser, the
//     CLI's agent.browser): the agent's browser tool, with a headless
//     Chromium of its own per MCP session, opened at the session's first
//     call and closed when the session ends or the server stops; each
//     result ends with the page's state (the agent shows it before each
//     step instead). Every request of the browser passes the SSRF guard.
//
// Failures are tool errors (CallToolResult.IsError) whose text says what
// went wrong, with secrets masked (Options.Redact); never protocol errors.
//
// The server is built from parts — a researcher factory, a searcher, a page
// reader — so tests give it fakes. Serve it over stdio with Stdio, or over
// streamable HTTP with Handler, behind the HTTP API's security
// (server.Guard: a token beyond loopback, the loopback Host check against
// DNS rebinding, no cross-site origins but the listed ones).
//
// # Stdio
//
// The SDK's stdio transport owns its read loop and ends the session — and
// the calls in flight — on the first line it cannot decode; it cannot be
// told to answer instead. Stdio therefore puts a guard in front of it (a
// reader, not a fork): each line is checked as the SDK would check it, and
// one the SDK would choke on is answered with a JSON-RPC error (-32700
// Parse error for what is not JSON or a line left unfinished for
// StdioOptions.LineTimeout; -32600 Invalid Request for JSON that is not one
// JSON-RPC 2.0 object, a batch, or a line over StdioOptions.MaxMessage),
// and the session goes on.
//
// # Example
//
//	srv, err := mcpserver.New(ctx, mcpserver.Options{
//		Version:  "v1.2.3",
//		Research: func(ctx context.Context) (mcpserver.Researcher, error) { return pool.Research(ctx, cfg, nil) },
//		Searcher: searcher, // nil: no web_search
//		Reader:   reader,   // a search.Reader
//	})
//	if err != nil { … }
//	err = srv.Run(ctx, mcpserver.Stdio(os.Stdin, os.Stdout, mcpserver.StdioOptions{}))
//
// New's context bounds the tool calls: when it ends, the calls in flight
// end too, so a shutdown does not wait for a research run.
package mcpserver
