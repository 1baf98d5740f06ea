package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/httpserve"
	"github.com/deepgraph/deepgraph/internal/server"
	"github.com/deepgraph/deepgraph/telemetry"
)

func (c *cli) serveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:8080]",
		Short: "Serve the LangGraph Agent Server API and the web page: threads, runs, live timelines, reviews",
		Long: `serve runs deepgraph as a server: the LangGraph Agent Server API — the API
of LangGraph's own server, so Agent Chat UI, the LangGraph SDKs (JS, Python,
useStream) and RemoteGraph work against it, with the assistants "research"
(the deep-search graph) and, with serve.allow_agent, "agent" and "flow"
(the planning flow) — and, at /, a web page to ask questions and follow
the research live. Point a LangGraph client's API URL at the server's
address. Runs execute in the background, at most serve.max_running at
once, with up to serve.queue_size waiting; they are kept in the store like
the command line's runs (research runs lists them, research show prints
their answers).

Security: it listens on 127.0.0.1 by default. Any other --addr needs a
token (serve.token or DEEPGRAPH_SERVE_TOKEN), sent as x-api-key (the SDKs'
apiKey) or Authorization: Bearer; without one the server refuses to start.
Pages of other sites may not call the API unless listed in
serve.cors_origins. Connections are bounded: slow headers or bodies and
idle connections time out, and beyond serve.max_connections (or
serve.max_connections_per_client from one address) idle or unfinished
connections are closed to make room, or the new one gets 503.

With --review (serve.review), research runs pause before each round of
searches for their queries to be approved, edited or rejected, unless a
run's config.configurable.review is false: Agent Chat UI sends no
configuration, and shows the review and answers it.

With --browser (agent.browser), agent runs get the browser tool: one
headless Chromium per run, at most serve.max_browsers at once.

SIGTERM or Ctrl-C stops it: running runs store what they finished and wait
as interrupted; with --resume-interrupted (serve.resume_interrupted) the
next start continues them. Runs still waiting run at the next start.`,
		Example: `  research serve
  DEEPGRAPH_SERVE_TOKEN=$(openssl rand -hex 32) research serve --addr 0.0.0.0:8080`,
		Args: cobra.NoArgs,
		RunE: c.serve,
	}
	if err := config.AddFlags(cmd.Flags(), append(config.KeysWithFlags("serve."), "agent.browser")...); err != nil {
		panic(err)
	}
	return cmd
}

func (c *cli) serve(cmd *cobra.Command, _ []string) error {
	cfg, err := c.loadConfig(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	logger := c.logger()
	addr := cfg.Serve.Addr
	if err := server.Check(addr, cfg.Serve.Token.Reveal()); err != nil {
		return usageErr("%v", err)
	}
	st, err := c.openStore(ctx, cfg)
	if err != nil {
		return err
	}
	if st == nil {
		return usageErr("research serve keeps its runs in the store, but the store is off (--no-save or store: off): set --store to a file or a postgres:// DSN")
	}
	defer st.Close()
	// The configuration must make a run: models and a back end. Checked
	// now, not at the first question.
	pool := app.NewPool(logger)
	defer pool.Close()
	probe, err := pool.Research(ctx, cfg, nil)
	if err != nil {
		return err
	}
	probe.Close()
	if cfg.Agent.Browser {
		if err := app.CheckBrowser(cfg); err != nil {
			return err
		}
	}

	srv, err := server.New(st, server.NewEngine(cfg, pool, logger), server.Options{
		Token: cfg.Serve.Token.Reveal(), CORSOrigins: cfg.Serve.CORSOrigins, MaxRunning: cfg.Serve.MaxRunning,
		QueueSize: cfg.Serve.QueueSize, ResumeInterrupted: cfg.Serve.ResumeInterrupted, Loopback: server.IsLoopback(addr),
		Version: shortVersion(), Redact: c.console.redact, Logger: logger,
		// Set up before every command (OTEL_*, --trace): requests and runs
		// are traced, and the engine wraps each run's models and tools.
		Telemetry: telemetry.From(ctx),
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErr("research serve cannot listen on %s: %v (choose another with --addr)", addr, err)
	}
	if err := srv.Start(ctx); err != nil {
		_ = ln.Close()
		return err
	}
	hs := httpServer(srv.Handler(), cfg, logger)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	// "Serving …" comes last: whoever waits for it has every start-up line.
	if cfg.Serve.Token.Reveal() == "" {
		c.console.line("No token: only this machine can reach the API")
	}
	if cfg.Agent.Browser && cfg.Serve.AllowAgent {
		c.console.line(fmt.Sprintf("Agent runs have a browser each (at most %d at once)", cfg.Serve.MaxBrowsers))
	}
	c.console.line(fmt.Sprintf("Serving http://%s (runs kept in %s; at most %d running, %d waiting)", ln.Addr(), st.Where,
		cfg.Serve.MaxRunning, cfg.Serve.QueueSize))
	select {
	case err := <-served:
		return fmt.Errorf("research serve stopped: %w", err)
	case <-ctx.Done():
	}
	c.console.line("Stopping: running runs store what they finished and wait as interrupted")
	drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	drainErr := srv.Shutdown(drain)
	closing, cancel2 := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel2()
	if err := hs.Shutdown(closing); err != nil {
		_ = hs.Close()
	}
	if drainErr != nil {
		return drainErr
	}
	c.console.line("Stopped")
	return nil
}

// httpServer serves h with the timeouts and connection limits of
// internal/httpserve, as configured under serve.
func httpServer(h http.Handler, cfg *config.Config, logger *slog.Logger) *httpserve.Server {
	return httpserve.New(h, httpserve.Options{
		MaxConns: cfg.Serve.MaxConnections, MaxConnsPerAddr: cfg.Serve.MaxConnectionsPerClient, Logger: logger,
	})
}
