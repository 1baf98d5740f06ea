package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research"
)

// Engine builds the graphs of runs. The server's is NewEngine, over the
// configuration; tests give one with fake models.
type Engine interface {
	// Choices are what a run may choose: kinds, efforts, back ends, models.
	Choices() Choices
	// Settings resolves what a new run asks for against what the server
	// allows. Its error (ErrBadRequest) says what was refused and why.
	Settings(req RunRequest) (app.Settings, error)
	// Research builds the researcher of a run with its settings, storing
	// its steps in cp.
	Research(ctx context.Context, set app.Settings, cp graph.Checkpointer) (*ResearchRun, error)
	// Agent builds the agent of a run with its settings.
	Agent(ctx context.Context, set app.Settings, cp graph.Checkpointer) (*AgentRun, error)
	// Flow builds the planning flow of a run with its settings, storing
	// its steps in cp.
	Flow(ctx context.Context, set app.Settings, cp graph.Checkpointer) (*FlowRun, error)
}

// RunRequest is what a run asks for, from its configuration (a run's
// config.configurable over the Agent Server API).
type RunRequest struct {
	// Kind is research (the default), agent or flow.
	Kind runstore.Kind
	// Effort is low, medium or high (research).
	Effort string
	// Review pauses the run before each round of searches for the
	// queries to be approved or edited (research); after the plan and
	// each revision of it, for the plan to be approved or edited (flow).
	Review bool
	// Backend is one of the server's back ends (Choices; research).
	Backend string
	// Models are model specs by role (query, research, reflection, answer;
	// "agent" for an agent), among the server's models (Choices).
	Models map[string]string
}

// FlowRun is the planning flow of one run.
type FlowRun struct {
	Flow *nodes.Flow
	// Models is the model spec per role its usage names; Prices as
	// ResearchRun's.
	Models map[string]string
	Prices llm.Prices
	Close  func()
}

// ResearchRun is the researcher of one run.
type ResearchRun struct {
	*research.Researcher
	// Models is the model spec per role; Backend the back end's name.
	Models  map[string]string
	Backend string
	// Prices are the prices per model spec that win over the built-in
	// table (the config file's prices key), for the run's cost; nil: the
	// built-in prices.
	Prices llm.Prices
	// Close releases what only this run holds (may be nil).
	Close func()
}

// AgentRun is the agent of one run.
type AgentRun struct {
	Agent *nodes.Agent
	// Model is the agent's model spec; Workspace the directory its tools
	// work in.
	Model     string
	Workspace string
	// Prices are as ResearchRun's.
	Prices llm.Prices
	// Meter counts the agent's model calls as they happen, for the tokens
	// of its timeline (nil: the timeline's tokens stay at what the run had
	// spent before).
	Meter *llm.Meter
	Close func()
}

// Choices are what a run may choose on this server, for GET /info.
type Choices struct {
	Kinds          []runstore.Kind
	Efforts        []research.Effort
	DefaultEffort  string
	Backends       []string
	DefaultBackend string
	Models         []string
	// DefaultReview is what a research run without a review in its
	// configuration does: pause for its queries (serve.review) or not.
	DefaultReview bool
}

// The back ends a run may choose.
const (
	BackendWeb    = "web"    // the configured web search providers
	BackendGemini = "gemini" // Gemini's Google Search grounding
	BackendCorpus = "corpus" // the configured local corpus
)

// ErrBadRequest marks a request the server refuses as it stands.
var ErrBadRequest = errors.New("bad request")

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}

// configEngine builds runs from the server's configuration, sharing models
// and back ends through a pool.
type configEngine struct {
	cfg     *config.Config
	pool    *app.Pool
	logger  *slog.Logger
	choices Choices
}

// NewEngine returns the engine of a server with cfg: runs use its models
// and back end unless they choose among those cfg allows (serve.models,
// the back ends configured), and share the pool's models and back ends.
func NewEngine(cfg *config.Config, pool *app.Pool, logger *slog.Logger) Engine {
	e := &configEngine{cfg: cfg, pool: pool, logger: logger}
	c := Choices{Kinds: []runstore.Kind{runstore.KindResearch}, Efforts: research.Efforts(), DefaultEffort: cfg.Effort,
		DefaultReview: cfg.Serve.Review}
	if cfg.Serve.AllowAgent {
		c.Kinds = append(c.Kinds, runstore.KindAgent)
	}
	if c.DefaultEffort == "" {
		c.DefaultEffort = "medium"
		for _, ef := range c.Efforts {
			if ef.Queries == cfg.InitialQueries && ef.Loops == cfg.MaxLoops {
				c.DefaultEffort = ef.Name
			}
		}
	}
	for _, role := range app.Roles {
		if s := cfg.RoleModel(role); s != "" && !slices.Contains(c.Models, s) {
			c.Models = append(c.Models, s)
		}
	}
	for _, s := range cfg.Serve.Models {
		if !slices.Contains(c.Models, s) {
			c.Models = append(c.Models, s)
		}
	}
	research := cfg.RoleModel(llm.RoleResearch)
	if plan, err := app.ChooseBackend(cfg, research); err == nil {
		c.DefaultBackend = backendChoice(plan.Kind)
	}
	for _, b := range []string{BackendWeb, BackendGemini, BackendCorpus} {
		alt := *cfg
		applyBackend(&alt, b)
		if plan, err := app.ChooseBackend(&alt, research); err == nil && backendChoice(plan.Kind) == b {
			c.Backends = append(c.Backends, b)
		}
	}
	e.choices = c
	return e
}

func backendChoice(k app.BackendKind) string {
	switch k {
	case app.BackendCorpus:
		return BackendCorpus
	case app.BackendGemini:
		return BackendGemini
	}
	return BackendWeb
}

// applyBackend points cfg's search at a back end choice.
func applyBackend(cfg *config.Config, choice string) {
	switch choice {
	case BackendWeb:
		cfg.Corpus = ""
		if len(cfg.Search) == 0 || cfg.Search[0] == config.SearchAuto || cfg.Search[0] == config.SearchGemini {
			// auto takes every web provider whose URL or key is set.
			cfg.Search = []string{config.SearchAuto}
		}
	case BackendGemini:
		cfg.Corpus, cfg.Search = "", []string{config.SearchGemini}
	}
}

func (e *configEngine) Choices() Choices { return e.choices }

func (e *configEngine) Settings(req RunRequest) (app.Settings, error) {
	c := e.choices
	allowed := func(spec string) error {
		if !slices.Contains(c.Models, spec) {
			return badRequest("model %q is not offered by this server (offered: %s; serve.models adds more)", spec, strings.Join(c.Models, ", "))
		}
		return nil
	}
	if req.Kind == runstore.KindAgent || req.Kind == runstore.KindFlow {
		if !slices.Contains(c.Kinds, runstore.KindAgent) {
			return app.Settings{}, badRequest("agent and flow runs are off on this server (serve.allow_agent)")
		}
		spec := e.cfg.Model
		for role, s := range req.Models {
			if role != "agent" {
				return app.Settings{}, badRequest(`models: an agent run has one model, under "agent" (not %q)`, role)
			}
			if err := allowed(s); err != nil {
				return app.Settings{}, err
			}
			spec = s
		}
		set := app.AgentSettings(e.cfg, spec, "")
		if req.Kind == runstore.KindFlow {
			set.Flow = &app.FlowRunSettings{Approve: req.Review}
		}
		return set, nil
	}
	cfg := *e.cfg
	set := app.Settings{Models: map[string]string{}, Queries: cfg.InitialQueries, Loops: cfg.MaxLoops, Review: req.Review, Effort: c.DefaultEffort}
	if req.Effort != "" {
		ef, err := research.EffortByName(req.Effort)
		if err != nil {
			return set, badRequest("effort: %v", err)
		}
		set.Effort, set.Queries, set.Loops = ef.Name, ef.Queries, ef.Loops
	}
	for _, role := range app.Roles {
		set.Models[role] = cfg.RoleModel(role)
	}
	for role, s := range req.Models {
		if !slices.Contains(app.Roles, role) {
			return set, badRequest("models: unknown role %q (roles: %s)", role, strings.Join(app.Roles, ", "))
		}
		if err := allowed(s); err != nil {
			return set, err
		}
		set.Models[role] = s
	}
	if req.Backend != "" {
		if !slices.Contains(c.Backends, req.Backend) {
			return set, badRequest("backend %q is not configured on this server (configured: %s)", req.Backend, strings.Join(c.Backends, ", "))
		}
		applyBackend(&cfg, req.Backend)
	}
	set.Search, set.Corpus = cfg.Search, cfg.Corpus
	return set, nil
}

// runConfig is the server's configuration with a run's settings applied.
func (e *configEngine) runConfig(set app.Settings) *config.Config {
	cfg := *e.cfg
	set.Apply(&cfg, func(string) bool { return false })
	return &cfg
}

func (e *configEngine) Research(ctx context.Context, set app.Settings, cp graph.Checkpointer) (*ResearchRun, error) {
	cfg := e.runConfig(set)
	r, err := e.pool.Research(ctx, cfg, cp)
	if err != nil {
		return nil, err
	}
	return &ResearchRun{Researcher: r.Researcher, Models: r.Models.Specs(), Backend: r.Backend.Name(), Prices: cfg.Prices, Close: r.Close}, nil
}

// agentConfig is the server's configuration with an agent or flow run's
// settings applied.
func (e *configEngine) agentConfig(set app.Settings) *config.Config {
	cfg := e.runConfig(set)
	if len(cfg.Agent.MCP) == 0 {
		// A served agent run starts no MCP server — whose command would
		// run on behalf of an API client — unless agent.mcp names them.
		cfg.Agent.MCP = []string{"none"}
	}
	return cfg
}

func (e *configEngine) Flow(ctx context.Context, set app.Settings, cp graph.Checkpointer) (*FlowRun, error) {
	cfg := e.agentConfig(set)
	setup, err := app.NewFlow(ctx, cfg, app.AgentIO{Logger: e.logger, Pool: e.pool}, set.Flow.Options(cp))
	if err != nil {
		return nil, err
	}
	return &FlowRun{Flow: setup.Flow, Models: setup.Specs(), Prices: cfg.Prices, Close: setup.Close}, nil
}

func (e *configEngine) Agent(ctx context.Context, set app.Settings, cp graph.Checkpointer) (*AgentRun, error) {
	cfg := e.agentConfig(set)
	setup, err := app.NewAgent(ctx, cfg, app.AgentIO{Checkpointer: cp, Logger: e.logger, Pool: e.pool})
	if err != nil {
		return nil, err
	}
	return &AgentRun{Agent: setup.Agent, Model: setup.Spec, Workspace: setup.Workspace, Prices: cfg.Prices, Meter: setup.Meter, Close: setup.Close}, nil
}
