// Package mcp offers the tools of MCP (Model Context Protocol) servers as
// tools.Tools, with the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// # The model
//
// A Server says how to reach one MCP server: a command that speaks MCP on
// its stdin and stdout (Command, Args, Env, Dir), or a streamable-HTTP
// endpoint (URL, Headers). Connect starts or reaches it and lists its tools;
// the Client it returns implements tools.Dynamic, so an agent takes the
// server's tools as they are at each step:
//
//	c, err := mcp.Connect(ctx, mcp.Server{Name: "files", Command: "npx",
//		Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"}}, mcp.Options{Logger: logger})
//	if err != nil { … }
//	defer c.Close()
//	agent, err := nodes.NewAgent(nodes.AgentConfig{…, Dynamic: []tools.Dynamic{c}})
//
// Each MCP tool becomes a tool named "server.tool" ("files.read_text_file"),
// described by the server's description (prefixed "[server] ") and taking
// the server's input schema. Names a model would refuse — characters other
// than letters, digits, '_', '.' and '-', a first character that is not a
// letter or '_', more than 64 characters — are made valid (characters
// replaced by '_', a long name cut and given a short hash, clashes numbered)
// and the renaming is logged. A schema that does not resolve does not cost
// the server its other tools: that tool takes any object instead (the server
// still checks the arguments), with a warning in the log.
//
// # Calls
//
// A call is bounded by the server's Timeout (DefaultTimeout, 60s, when zero)
// and by its context; when either ends, the SDK sends the server
// notifications/cancelled. A timeout is a failed result ("files.read timed
// out after 60s"); a cancelled context is an error, as the tools contract
// wants. The result maps to a tools.Result: text content to Output (joined
// by newlines); images to Images; resource links and embedded resources to
// lines naming their URI (an embedded text resource with its text, an
// embedded image attached), and http(s) URIs to Sources; structured content
// to JSON text when there is no text; isError to Error. Nothing is cut: the
// agent caps what it shows the model.
//
// # Servers that stop
//
// When the connection is lost — a stdio server exited or crashed, an HTTP
// server went away or forgot the session — the call in flight returns a
// failed result, "MCP server files stopped (exit status 1); it will be
// restarted on the next call", and the next call (or Collection) starts the
// server again and lists its tools again. Tools added or removed by a server
// (notifications/tools/list_changed) are picked up at the next Collection.
//
// # Stdio servers and their environment
//
// A stdio server runs as you, in a process group of its own. Close stops it
// as the MCP specification asks — stdin closed, then SIGTERM, then SIGKILL,
// each to the whole group after a grace period — and reaps it: no zombie,
// and nothing it started is left running. Its stderr goes to the logger at
// debug level; its last lines are logged when it stops unexpectedly.
//
// A server does not inherit this process's whole environment, which holds
// API keys: only PATH, HOME, USER, LOGNAME, SHELL, TERM, LANG, LANGUAGE, TZ,
// TMPDIR, the proxy variables, SSL_CERT_FILE, SSL_CERT_DIR,
// NODE_EXTRA_CA_CERTS, LC_*, XDG_*, npm_config_*, NPM_CONFIG_* and NVM_*
// (and Windows' system variables). Give it what else it needs in Env.
//
// # Secrets
//
// Env values and Headers are secrets: a Server prints without them (fmt,
// %#v, slog), and the client's errors and logs never show them, nor the
// query values of a URL (which often carry API keys). Headers are sent only
// to the server's own scheme and host, never after a redirect elsewhere.
package mcp
