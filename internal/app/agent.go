package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/telemetry"
	"github.com/deepgraph/deepgraph/tools"
	"github.com/deepgraph/deepgraph/tools/browser"
)

// AgentIO is how the agent reaches the user.
type AgentIO struct {
	// Human answers ask_human; nil leaves ask_human out (the CLI sets it
	// only when stdin is a terminal) unless the agent has a Checkpointer.
	Human tools.Asker
	// Checkpointer stores the agent's runs. With it, ask_human is always
	// offered: its calls pause the run until the answer is given (on the
	// terminal, or later with research resume --answer), and Human is not
	// used.
	Checkpointer graph.Checkpointer
	// Logger receives debug records of the tools.
	Logger *slog.Logger
	// Pool, when set, provides the model, shared with other runs.
	Pool *Pool
}

// ErrApproveNeedsStore: agent.approve_tools without a store to pause the
// run in.
var ErrApproveNeedsStore = errors.New("--approve-tools (agent.approve_tools) pauses the run until each tool call with side effects is approved, which needs the run store: drop --no-save (or set --store)")

// pausingHuman stands in for the Asker of an agent whose ask_human calls
// pause the run: the agent never calls it.
type pausingHuman struct{}

func (pausingHuman) Ask(context.Context, string) (string, error) { return "", tools.ErrNoHuman }

// AgentSetup is an agent built from a configuration.
type AgentSetup struct {
	Agent *nodes.Agent
	Tools *tools.Collection
	// Spec is the agent's model spec, and Model the model.
	Spec  string
	Model llm.Model
	// Meter counts the agent's model calls as they happen (role agent),
	// for a running count of the tokens; the result's Usage is the run's
	// own account of them.
	Meter *llm.Meter
	// Workspace is the directory the file and exec tools work in;
	// TempWorkspace says it was created for this run (and is kept after it,
	// so its files can be inspected).
	Workspace     string
	TempWorkspace bool
	// Research is the researcher behind deep_research; nil when the
	// configuration makes no research run.
	Research *Research
	// MCP are the MCP servers whose tools the agent has (agent.mcp).
	MCP *MCPSet
	// Browser is the run's browser (agent.browser), nil without one; its
	// page state is shown to the model before each step.
	Browser     *browser.Session
	browserNote string
	closers     []func()
}

// BrowserNote is the line that says the run has a browser, "" without.
func (a *AgentSetup) BrowserNote() string {
	return a.browserNote
}

// Close releases what the agent's tools hold open. The workspace is kept.
func (a *AgentSetup) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}

// NewAgent builds the agent of `research agent`:
//
//   - web_search when a search provider (or a corpus) is configured;
//   - fetch_page behind the SSRF guard (allow_private_urls opens private
//     addresses);
//   - str_replace_editor confined to the workspace: agent.workspace, or a
//     new temporary directory; file-system roots, system directories and
//     the user's home directory itself are refused (tools.CheckWorkspace);
//   - every tool call bounded by agent.tool_timeout (python_execute and
//     bash killed with what they started), but ask_human and deep_research,
//     which the caller bounds with the run;
//   - python_execute and bash only with agent.allow_exec;
//   - deep_research, the deep-search graph, when the configuration makes a
//     research run (models and a back end);
//   - browser, a headless Chromium, with agent.browser: the SSRF guard of
//     fetch_page on every request it makes, one browser per run (started
//     at its first action, killed with the run), at most serve.max_browsers
//     at once among the runs of aio.Pool; its page state is shown to the
//     model before each step;
//   - ask_human when aio.Human or aio.Checkpointer is set; planning; terminate;
//   - the tools of the MCP servers agent.mcp selects (all configured ones
//     by default), named server.tool, as they are at each step.
//
// agent.tools narrows the set (an unknown name, or an exec tool without
// allow_exec, is a setup error naming the available tools); its names with
// a dot narrow the MCP tools (server.tool, or server.* for all of a
// server's), and when it is set, MCP tools it does not name are left out.
// agent.deny_tools removes tools (names or patterns, as server.*).
// A step never offers the model more than nodes.DefaultMaxTools tools: it
// fails with an error naming the limit instead.
//
// With agent.approve_tools, each tool call with side effects waits for a
// person's decision (nodes.AgentConfig.ApproveTools): it needs
// aio.Checkpointer, as the run pauses for it (ErrApproveNeedsStore).
func NewAgent(ctx context.Context, cfg *config.Config, aio AgentIO) (_ *AgentSetup, err error) {
	spec := cfg.Model
	var model llm.Model
	if aio.Pool != nil {
		model, err = aio.Pool.Model(ctx, cfg, spec)
	} else {
		model, err = OpenModel(ctx, cfg, spec, aio.Logger)
	}
	if err != nil {
		return nil, err
	}
	tel := telemetry.From(ctx)
	model = tel.Model(model, spec, llm.RoleAgent)
	limited := map[string]llm.Model{llm.RoleAgent: model}
	if err := costLimit(cfg, map[string]string{llm.RoleAgent: spec}, limited); err != nil {
		return nil, err
	}
	meter := new(llm.Meter)
	model = llm.Metered(limited[llm.RoleAgent], meter, llm.RoleAgent)
	setup := &AgentSetup{Spec: spec, Model: model, Meter: meter}
	defer func() {
		if err != nil {
			setup.Close()
		}
	}()

	ws, temp, err := workspace(cfg)
	if err != nil {
		return nil, err
	}
	setup.Workspace, setup.TempWorkspace = ws, temp

	opts := tools.DefaultOptions{
		Editor: tools.EditorOptions{Workspace: ws},
		Exec:   tools.ExecOptions{AllowExec: cfg.Agent.AllowExec, Workspace: ws, Timeout: toolTimeout(cfg), Logger: aio.Logger},
	}
	if s, closeFn, err := agentSearcher(ctx, cfg, aio.Logger); err != nil {
		return nil, err
	} else if s != nil {
		opts.WebSearch = tools.WebSearchOptions{Searcher: tel.Searcher(s)}
		setup.closers = append(setup.closers, closeFn)
	}
	reader, err := PageReader(cfg, aio.Logger)
	if err != nil {
		return nil, err
	}
	setup.closers = append(setup.closers, reader.Close)
	opts.FetchPage = tools.FetchPageOptions{Reader: tel.Reader(reader)}
	switch {
	case aio.Checkpointer != nil:
		opts.AskHuman = tools.AskHumanOptions{Asker: pausingHuman{}}
	case aio.Human != nil:
		opts.AskHuman = tools.AskHumanOptions{Asker: aio.Human}
	}
	all, err := tools.NewDefault(opts)
	if err != nil {
		return nil, &setupError{fmt.Errorf("agent tools: %w", err)}
	}
	if all, err = setup.addResearch(ctx, cfg, aio, all); err != nil {
		return nil, err
	}
	if cfg.Agent.Browser {
		var slots *browser.Slots
		if aio.Pool != nil {
			slots = aio.Pool.BrowserSlots(cfg)
		}
		b, err := NewBrowser(cfg, reader, slots, aio.Logger, false)
		if err != nil {
			return nil, err
		}
		setup.Browser, setup.browserNote = b, browserNote(cfg, b)
		setup.closers = append(setup.closers, b.Close)
		if all, err = beforeTerminate(all, b); err != nil {
			return nil, err
		}
	}
	set := all
	// Names with a dot are MCP tools (server.tool, or server.* for all of
	// a server's): the agent's allow-list narrows its MCP tools with them.
	var builtin, allow []string
	for _, name := range cfg.Agent.Tools {
		if strings.Contains(name, ".") {
			allow = append(allow, name)
		} else {
			builtin = append(builtin, name)
		}
	}
	if len(cfg.Agent.Tools) > 0 {
		allow = append(allow, builtin...)
	}
	if len(builtin) > 0 {
		for _, name := range builtin {
			if (name == tools.PythonExecuteName || name == tools.BashName) && !cfg.Agent.AllowExec {
				return nil, &setupError{cfg.Invalid("agent.tools", strings.Join(cfg.Agent.Tools, ","),
					"only available tools; "+name+" also needs --allow-exec (agent.allow_exec), which lets the model run code as you", nil)}
			}
			if name == browser.Name && !cfg.Agent.Browser {
				return nil, browserToolError(cfg)
			}
		}
		set, err = all.Subset(builtin...)
		if err != nil {
			return nil, &setupError{cfg.Invalid("agent.tools", strings.Join(cfg.Agent.Tools, ","),
				"names of available tools: "+strings.Join(all.Names(), ", "), errors.Unwrap(err))}
		}
	}
	if set, err = traceTools(tel, set); err != nil {
		return nil, &setupError{fmt.Errorf("agent tools: %w", err)}
	}
	set = set.WithCallTimeout(toolTimeout(cfg))
	mcpSet, err := OpenMCP(ctx, cfg, aio.Logger)
	if err != nil {
		return nil, err
	}
	setup.closers = append(setup.closers, mcpSet.Close)
	setup.MCP = mcpSet
	dynamic := mcpSet.Dynamic()
	for i, d := range dynamic {
		dynamic[i] = &boundedDynamic{inner: d, timeout: toolTimeout(cfg), tel: tel}
	}
	var states []nodes.StateSource
	if _, ok := set.Get(browser.Name); ok && setup.Browser != nil {
		states = append(states, setup.Browser)
	}
	if cfg.Agent.ApproveTools && aio.Checkpointer == nil {
		return nil, &setupError{ErrApproveNeedsStore}
	}
	agent, err := nodes.NewAgent(nodes.AgentConfig{Model: model, Tools: set, MaxSteps: cfg.Agent.MaxSteps, TextMode: cfg.Agent.TextMode,
		Checkpointer: aio.Checkpointer, Dynamic: dynamic, ModelRetry: modelRetry(cfg), States: states, AllowTools: allow,
		DenyTools: cfg.Agent.DenyTools, ApproveTools: cfg.Agent.ApproveTools, Workspace: ws})
	if err != nil {
		return nil, &setupError{fmt.Errorf("agent: %w", err)}
	}
	setup.Agent, setup.Tools = agent, agent.Tools()
	return setup, nil
}

// addResearch offers the deep-research graph as the tool deep_research
// when the configuration makes a research run (models and a back end);
// otherwise the agent goes without it, and -v says why.
func (a *AgentSetup) addResearch(ctx context.Context, cfg *config.Config, aio AgentIO, all *tools.Collection) (*tools.Collection, error) {
	var r *Research
	var err error
	if aio.Pool != nil {
		r, err = aio.Pool.Research(ctx, cfg, nil)
	} else {
		r, err = NewResearch(ctx, cfg, aio.Logger, nil)
	}
	if err != nil {
		if aio.Logger != nil {
			aio.Logger.Debug("deep_research is not offered", "why", err.Error())
		}
		return all, nil
	}
	a.closers = append(a.closers, r.Close)
	a.Research = r
	tool, err := research.NewTool(r.Researcher, cfg.Effort)
	if err != nil {
		return nil, &setupError{fmt.Errorf("deep_research: %w", err)}
	}
	// A deep-research run takes minutes by design; --timeout bounds it
	// with the whole run.
	tool = tools.WithTimeout(tool, 0)
	return beforeTerminate(all, tool)
}

// beforeTerminate adds tool to the collection before terminate, which
// stays last.
func beforeTerminate(all *tools.Collection, tool tools.Tool) (*tools.Collection, error) {
	ts := all.Tools()
	ts = append(ts[:len(ts)-1:len(ts)-1], tool, ts[len(ts)-1])
	c, err := tools.NewCollection(ts...)
	if err != nil {
		return nil, &setupError{fmt.Errorf("agent tools: %w", err)}
	}
	return c, nil
}

// agentSearcher is the searcher behind web_search: the corpus when one is
// set, else the configured web providers; nil when neither is.
func agentSearcher(ctx context.Context, cfg *config.Config, logger *slog.Logger) (search.Searcher, func(), error) {
	if cfg.Corpus != "" {
		ix, err := OpenCorpus(ctx, cfg, logger)
		if err != nil {
			return nil, nil, err
		}
		return ix, func() { _ = ix.Close() }, nil
	}
	names := cfg.Search
	if cfg.SearchAuto() || cfg.SearchGemini() {
		names = cfg.ConfiguredWebProviders()
	}
	if len(names) == 0 {
		return nil, nil, nil
	}
	for _, p := range names {
		if !contains(cfg.ConfiguredWebProviders(), p) {
			return nil, nil, setupErr("search lists %s, but %s is not set (config key %s)", p, config.ProviderVariable(p), providerKey(p))
		}
	}
	chain, err := WebSearcher(cfg, names, logger)
	if err != nil {
		return nil, nil, err
	}
	return chain, func() {}, nil
}

// workspace returns the agent's workspace: the configured directory (which
// must exist and pass tools.CheckWorkspace), or a new temporary directory.
func workspace(cfg *config.Config) (dir string, temp bool, err error) {
	ws := cfg.Agent.Workspace
	if ws == "" {
		dir, err := os.MkdirTemp("", "deepgraph-agent-")
		if err != nil {
			return "", false, setupErr("creating a temporary workspace: %w", err)
		}
		return dir, true, nil
	}
	abs, err := filepath.Abs(ws)
	if err != nil {
		return "", false, &setupError{cfg.Invalid("agent.workspace", ws, "an existing directory", err)}
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}
	info, err := os.Stat(abs)
	if err != nil || !info.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return "", false, &setupError{cfg.Invalid("agent.workspace", ws, "an existing directory", err)}
	}
	var we *tools.WorkspaceError
	if err := tools.CheckWorkspace(ws); errors.As(err, &we) {
		return "", false, &setupError{cfg.Invalid("agent.workspace", ws, "a project directory, not "+we.What+
			" (the agent may create, edit and, with --allow-exec, run anything in it): pass a new directory for the task instead (mkdir ~/agent-work; --workspace ~/agent-work)", nil)}
	} else if err != nil {
		return "", false, &setupError{cfg.Invalid("agent.workspace", ws, "an existing directory", err)}
	}
	return abs, false, nil
}

// toolTimeout bounds one tool call of the agent (agent.tool_timeout).
func toolTimeout(cfg *config.Config) time.Duration {
	if cfg.Agent.ToolTimeout > 0 {
		return cfg.Agent.ToolTimeout
	}
	return tools.DefaultCallTimeout
}

// boundedDynamic gives the calls of a dynamic tool set (an MCP server's)
// the agent's tool timeout, and spans when tel is set. It keeps the
// collection it last made, so the agent sees the same collection while the
// set does not change.
type boundedDynamic struct {
	inner   tools.Dynamic
	timeout time.Duration
	tel     *telemetry.Telemetry

	mu       sync.Mutex
	from, to *tools.Collection
}

func (b *boundedDynamic) Collection(ctx context.Context) (*tools.Collection, error) {
	c, err := b.inner.Collection(ctx)
	if err != nil || c == nil {
		return c, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c != b.from {
		traced, err := traceTools(b.tel, c)
		if err != nil {
			return nil, err
		}
		b.from, b.to = c, traced.WithCallTimeout(b.timeout)
	}
	return b.to, nil
}

// ExecToolNames are the tools that run code.
var ExecToolNames = []string{tools.PythonExecuteName, tools.BashName}

// HasExec reports whether the collection can run code.
func HasExec(c *tools.Collection) bool {
	return slices.ContainsFunc(c.Names(), func(n string) bool { return slices.Contains(ExecToolNames, n) })
}

// AgentOutcome is the status a finished agent run is kept with, and why:
// done when it did its task (terminate with success, or an answer without
// tool calls); failed when it gave up, reached its step limit (maxSteps)
// or was stuck repeating itself — its answer, if any, is then a best effort
// and is kept with it.
func AgentOutcome(res *nodes.AgentResult, maxSteps int) (runstore.Status, string) {
	switch res.Status {
	case nodes.AgentSuccess, nodes.AgentAnswered:
		return runstore.StatusDone, ""
	case nodes.AgentFailure:
		return runstore.StatusFailed, "the agent gave up: it could not complete the task (its answer says why)"
	case nodes.AgentMaxSteps:
		return runstore.StatusFailed, fmt.Sprintf("the agent reached its step limit (%d; raise it with --max-steps): its answer is a best effort", maxSteps)
	case nodes.AgentStuck:
		return runstore.StatusFailed, "the agent was stuck repeating itself and stopped: try a more capable model or rephrase the task"
	case nodes.AgentMissingFiles:
		return runstore.StatusFailed, fmt.Sprintf("the agent said it was done, but %s, which the task asked for, is missing or empty in the workspace after its verification turns", strings.Join(res.Missing, ", "))
	}
	return runstore.StatusFailed, fmt.Sprintf("the agent ended with status %q", res.Status)
}
