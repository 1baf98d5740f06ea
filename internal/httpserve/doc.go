// Package httpserve runs deepgraph's HTTP servers — research serve's API and
// research mcp --http — with the timeouts and connection limits that keep
// them reachable when clients are slow, idle or hostile. It imports nothing
// of deepgraph's.
//
// # Timeouts
//
//   - ReadHeaderTimeout bounds the wait for a request's headers (slowloris).
//   - BodyTimeout bounds the reading of a request's body, set by the
//     middleware when the handler starts and lifted once the body has been
//     read, so that it never cuts a long response. (http.Server.ReadTimeout
//     would: once the body is read the server watches the connection for
//     the client going away, and a read deadline passing there cancels the
//     request's context — a stream's included.)
//   - WriteTimeout bounds each write of a response, not the response: the
//     middleware moves the connection's write deadline (through
//     http.ResponseController) before each Write and Flush, so a stream of
//     events lives as long as its client reads it, and one whose client
//     stops reading ends WriteTimeout after the socket's buffers fill.
//     (http.Server.WriteTimeout bounds the whole response and would cut
//     every stream.)
//   - IdleTimeout closes a kept-alive connection that sends no new request.
//
// # Connection limits
//
// MaxConns bounds the connections open at once, and MaxConnsPerAddr those
// of one client address. The default total is half the process's
// open-file limit (at most 4096), so that accepting connections can never
// use up the file descriptors the server needs for its own work — the
// failure this package was made for: with 1,024 descriptors, 1,100 idle
// connections left accept4 failing with "too many open files" and
// /healthz unanswered.
//
// The limits are kept by a net.Listener wrapper, which sees a connection
// before http.Server does and can refuse it before it costs a goroutine,
// together with http.Server's ConnState hook and the middleware, which say
// what each connection is doing. (ConnState alone cannot refuse a
// connection, and cannot tell a request whose headers are still trickling
// in from one in a handler: both are StateActive.) When a new connection
// would pass a limit, the wrapper first closes the oldest connection of
// the same client — or, for the total, of the client holding the most —
// that is not serving a request: idle, still sending its headers, or still
// sending its body. Closing those loses no work: an idle keep-alive
// connection may be closed at any time under HTTP, and a request not yet
// received was not started. So a flood of idle or slow connections
// recycles its own connections while a client that sends a request at
// once is served. When every connection is serving a request (streams, say),
// the new one gets a 503 with Retry-After and a JSON body saying which
// limit was reached, and is closed.
//
// Responses to requests without the server's token are sent with
// Connection: close by the caller (server.Guard), so that a refused client
// does not keep its connection.
//
// # Example
//
//	srv := httpserve.New(handler, httpserve.Options{Logger: logger})
//	go func() { errc <- srv.Serve(ln) }()
//	…
//	_ = srv.Shutdown(ctx)
package httpserve
