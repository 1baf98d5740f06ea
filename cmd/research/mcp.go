package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/mcpserver"
	"github.com/deepgraph/deepgraph/internal/server"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/tools/browser"
)

func (c *cli) mcpCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "mcp [--http 127.0.0.1:8765]",
		Short: "Serve deepgraph to MCP clients (Claude Desktop, IDEs): deep_research, web_search, fetch_page",
		Long: `mcp serves deepgraph as a Model Context Protocol server, for MCP clients
such as Claude Desktop, IDEs and agents. It offers three tools:

  deep_research  a full research run (question, effort): the cited report in
                 Markdown, with progress notifications while it runs;
                 cancelling the call stops the run
  web_search     one search (query, max_results), when a search provider or a
                 corpus is configured
  fetch_page     one public web page as Markdown (url, offset)

and, only with --browser (agent.browser), a fourth:

  browser        a headless Chromium of the session's own (go_to_url, click,
                 input_text, …; each result ends with the page's state),
                 behind the same SSRF guard; at most serve.max_browsers at
                 once

By default it speaks MCP over stdio: the client starts "research mcp" and
talks to it on stdin and stdout; logs go to stderr. With --http ADDR it
serves MCP's streamable HTTP transport at http://ADDR/mcp instead (and
/healthz), with the security of research serve: 127.0.0.1 only unless a
token is set (serve.token or DEEPGRAPH_SERVE_TOKEN, sent as Authorization:
Bearer), and no calls from pages of other sites unless listed in
serve.cors_origins.

It uses the configuration of research (config file, environment, flags):
models, search, effort, corpus, allow_private_urls, timeout (per call), and
serve.max_running (calls researching at once).`,
		Example: `  research mcp
  research mcp --http 127.0.0.1:8765
  DEEPGRAPH_SERVE_TOKEN=$(openssl rand -hex 32) research mcp --http 0.0.0.0:8765

  # Claude Desktop (claude_desktop_config.json):
  {"mcpServers": {"deepgraph": {"command": "research", "args": ["mcp"],
    "env": {"GEMINI_API_KEY": "…"}}}}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.mcp(cmd, addr) },
	}
	cmd.Flags().StringVar(&addr, "http", "", "serve MCP's streamable HTTP transport at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8765)")
	if err := config.AddFlags(cmd.Flags(), "agent.browser"); err != nil {
		panic(err)
	}
	return cmd
}

// mcp serves the MCP server over stdio, or over HTTP at addr. Nothing but
// the protocol goes to stdout in stdio mode: every line of ours goes to
// the console (stderr).
func (c *cli) mcp(cmd *cobra.Command, addr string) error {
	cfg, err := c.loadConfig(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	logger := c.logger()
	c.console.setQuiet(c.quiet)
	token := cfg.Serve.Token.Reveal()
	if addr != "" {
		if err := server.Check(addr, token); err != nil {
			return usageErr("research mcp --http: %v", err)
		}
	}
	// The configuration must make a run: models and a back end. Checked
	// now, not at the first call.
	pool := app.NewPool(logger)
	defer pool.Close()
	probe, err := pool.Research(ctx, cfg, nil)
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: exitInterrupted, err: errInterrupted}
		}
		return err
	}
	probe.Close()
	searcher, err := mcpSearcher(cfg, probe, logger)
	if err != nil {
		return err
	}
	reader, err := app.PageReader(cfg, logger)
	if err != nil {
		return err
	}
	defer reader.Close()

	opts := mcpserver.Options{
		Version: versionString(),
		Research: func(ctx context.Context) (mcpserver.Researcher, error) {
			r, err := pool.Research(ctx, cfg, nil)
			if err != nil {
				return nil, err
			}
			return r, nil
		},
		DefaultEffort: defaultEffort(cfg),
		Searcher:      searcher,
		Reader:        reader,
		Timeout:       cfg.Timeout,
		MaxRunning:    cfg.Serve.MaxRunning,
		Redact:        c.console.redact,
		Logger:        logger,
	}
	if cfg.Agent.Browser {
		if err := app.CheckBrowser(cfg); err != nil {
			return err
		}
		slots := pool.BrowserSlots(cfg)
		var opened openBrowsers
		defer opened.closeAll() // before the command returns: nothing is left behind
		opts.Browser = func() (mcpserver.BrowserSession, error) {
			b, err := app.NewBrowser(cfg, reader, slots, logger, true)
			if err != nil {
				return nil, err
			}
			opened.add(b)
			return trackedBrowser{b, &opened}, nil
		}
	}
	srv, err := mcpserver.New(ctx, opts)
	if err != nil {
		return err
	}
	tools := "deep_research, fetch_page"
	if searcher != nil {
		tools = "deep_research, web_search, fetch_page"
	}
	if cfg.Agent.Browser {
		tools += fmt.Sprintf(", browser (one per session, at most %d at once)", cfg.Serve.MaxBrowsers)
	}
	if addr == "" {
		return c.mcpStdio(ctx, srv, tools, probe)
	}
	return c.mcpHTTP(ctx, srv, addr, token, cfg, tools, probe)
}

// mcpSearcher is the searcher behind web_search, as the agent's: the
// corpus, or the configured web providers; nil when there is neither (a
// Gemini grounding back end and no provider).
func mcpSearcher(cfg *config.Config, r *app.Research, logger *slog.Logger) (search.Searcher, error) {
	if r.Backend.Searcher != nil {
		return r.Backend.Searcher, nil
	}
	if ps := cfg.ConfiguredWebProviders(); len(ps) > 0 && cfg.Corpus == "" {
		chain, err := app.WebSearcher(cfg, ps, logger)
		if err != nil {
			return nil, err
		}
		return chain, nil
	}
	return nil, nil
}

// defaultEffort names what a call without an effort gets: the configured
// preset, or the configured counts.
func defaultEffort(cfg *config.Config) string {
	if cfg.Effort != "" {
		return cfg.Effort
	}
	for _, ef := range research.Efforts() {
		if ef.Queries == cfg.InitialQueries && ef.Loops == cfg.MaxLoops {
			return ef.Name
		}
	}
	return fmt.Sprintf("%s a round, at most %s", app.Plural(cfg.InitialQueries, "query", "queries"), app.Plural(cfg.MaxLoops, "round", "rounds"))
}

func (c *cli) mcpStdio(ctx context.Context, srv *mcp.Server, tools string, r *app.Research) error {
	c.console.line(fmt.Sprintf("MCP server deepgraph on stdio (%s), researching with %s using %s", tools, r.Backend.Name(), r.Models.Spec("research")))
	if c.stdinTTY {
		c.console.line("Waiting for an MCP client on stdin: an MCP client (Claude Desktop, an IDE) starts this command itself; Ctrl-C quits")
	}
	in, ok := c.stdin.(io.ReadCloser)
	if !ok {
		in = io.NopCloser(c.stdin)
	}
	// A malformed, overlong or unfinished message is answered with a
	// JSON-RPC error and the session goes on (mcpserver.Stdio).
	err := srv.Run(ctx, mcpserver.Stdio(in, c.stdout, mcpserver.StdioOptions{Logger: c.logger()}))
	switch {
	case ctx.Err() != nil:
		c.console.line("Stopped")
		return nil
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, mcp.ErrConnectionClosed):
		return nil // the client went away
	}
	return fmt.Errorf("research mcp: %w", err)
}

func (c *cli) mcpHTTP(ctx context.Context, srv *mcp.Server, addr, token string, cfg *config.Config, tools string, r *app.Research) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErr("research mcp cannot listen on %s: %v (choose another with --http)", addr, err)
	}
	h := mcpserver.Handler(srv, mcpserver.HTTPOptions{
		Guard:  server.GuardOptions{Token: token, CORSOrigins: cfg.Serve.CORSOrigins, Loopback: server.IsLoopback(addr)},
		Logger: c.logger(),
	})
	hs := httpServer(h, cfg, c.logger())
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	// "Serving …" comes last: whoever waits for it has every start-up line.
	if token == "" {
		c.console.line("No token: only this machine can reach it")
	}
	c.console.line(fmt.Sprintf("Serving MCP at http://%s%s (%s), researching with %s using %s", ln.Addr(), mcpserver.PathMCP, tools,
		r.Backend.Name(), r.Models.Spec("research")))
	select {
	case err := <-served:
		return fmt.Errorf("research mcp stopped: %w", err)
	case <-ctx.Done():
	}
	// ctx has ended New's context too: the calls in flight are ending, so
	// the sessions close promptly, and with them their open streams.
	c.console.line("Stopping: calls in flight are cancelled")
	mcpserver.CloseSessions(srv)
	// The sessions are closed, their calls answered: what is left is the
	// responses being written, and connections a client opened ahead of
	// need, which Shutdown would wait 5 s for.
	closing, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := hs.Shutdown(closing); err != nil {
		_ = hs.Close()
	}
	c.console.line("Stopped")
	return nil
}

// openBrowsers are the browsers research mcp opened for its sessions and
// that are still open: the server closes each when its session ends, and
// the command closes the rest before it returns.
type openBrowsers struct {
	mu  sync.Mutex
	all []*browser.Session
}

func (o *openBrowsers) add(b *browser.Session) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.all = append(o.all, b)
}

func (o *openBrowsers) remove(b *browser.Session) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.all = slices.DeleteFunc(o.all, func(x *browser.Session) bool { return x == b })
}

// trackedBrowser is a session's browser that leaves openBrowsers when the
// server closes it.
type trackedBrowser struct {
	*browser.Session
	o *openBrowsers
}

func (t trackedBrowser) Close() {
	t.Session.Close()
	t.o.remove(t.Session)
}

func (o *openBrowsers) closeAll() {
	o.mu.Lock()
	all := o.all
	o.all = nil
	o.mu.Unlock()
	for _, b := range all {
		b.Close()
	}
}
