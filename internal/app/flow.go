package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/tools"
	"github.com/deepgraph/deepgraph/tools/browser"
)

// FlowSetup is a planning flow built from a configuration.
type FlowSetup struct {
	Flow *nodes.Flow
	// Agent is the default executor's setup: its tools and workspace.
	Agent *AgentSetup
	// Executors are the executors' names, the default first.
	Executors []string
}

// Close releases what the executors hold open.
func (f *FlowSetup) Close() { f.Agent.Close() }

// Specs are the model specs of the roles a flow's usage names, to price
// it: the planner and the agent at the agent's model, and the
// researcher's roles at theirs.
func (f *FlowSetup) Specs() map[string]string {
	specs := map[string]string{}
	if r := f.Agent.Research; r != nil && r.Models != nil {
		maps.Copy(specs, r.Models.Specs())
	}
	specs[nodes.RolePlanner] = f.Agent.Spec
	specs[llm.RoleAgent] = f.Agent.Spec
	return specs
}

// Executor names of the flow of `research flow`.
const (
	ExecutorAgent      = "agent"
	ExecutorResearcher = "researcher"
	ExecutorBrowser    = "browser"
)

// FlowOptions are the flow's own settings.
type FlowOptions struct {
	// Approve pauses the run after the plan and each revision until the
	// plan is approved or edited; it needs Checkpointer.
	Approve      bool
	Checkpointer graph.Checkpointer
	// MaxPlanSteps and MaxRevisions: see nodes.FlowConfig (0: defaults).
	MaxPlanSteps, MaxRevisions int
}

// NewFlow builds the flow of `research flow`: the configured model plans,
// revises and summarises; steps go to
//
//   - agent (the default): the agent of research agent — web_search,
//     fetch_page, the workspace editor, deep_research, MCP tools, code only
//     with allow_exec — with a fresh step budget per step;
//   - researcher, when the configuration makes a research run: the
//     deep-search graph on the step's question;
//   - browser, with agent.browser: an agent with the browser alone (and
//     terminate), for steps that need a real browser. It drives the same
//     browser as the agent's browser tool: one browser per flow run, its
//     pages and tabs carried from step to step.
//
// aio.Human and aio.Checkpointer are not used. With agent.approve_tools the
// agent executor asks before each tool call with side effects: the flow
// pauses at the call (nodes.FlowResult.Approval), which needs
// fo.Checkpointer (ErrApproveNeedsStore without it).
func NewFlow(ctx context.Context, cfg *config.Config, aio AgentIO, fo FlowOptions) (_ *FlowSetup, err error) {
	agentIO := AgentIO{Logger: aio.Logger, Pool: aio.Pool}
	if cfg.Agent.ApproveTools {
		// The agent's runs pause inside the flow's steps, in the flow's
		// thread (each step's run is nested in it).
		agentIO.Checkpointer = fo.Checkpointer
	}
	agent, err := NewAgent(ctx, cfg, agentIO)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			agent.Close()
		}
	}()
	planner := agent.Model
	execs := []nodes.FlowExecutor{{Name: ExecutorAgent, Executor: nodes.AgentExecutor(agent.Agent),
		Description: "an autonomous agent with tools (" + strings.Join(agent.Tools.Names(), ", ") + "); for finding facts, reading pages, writing and editing files in the workspace" + execNote(agent)}}
	if agent.Research != nil {
		var opts []research.RunOption
		if cfg.InitialQueries > 0 {
			opts = append(opts, research.InitialQueries(cfg.InitialQueries))
		}
		if cfg.MaxLoops > 0 {
			opts = append(opts, research.MaxLoops(cfg.MaxLoops))
		}
		execs = append(execs, nodes.FlowExecutor{Name: ExecutorResearcher, Executor: agent.Research.Executor(opts...),
			Description: "researches one question in depth on the web (several searches, reading, reflection) and returns a report with cited sources; for questions that need several sources"})
	}
	if bt, ok := agent.Tools.Get(browser.Name); ok && agent.Browser != nil {
		b, err := browserAgent(cfg, agent, bt)
		if err != nil {
			return nil, err
		}
		execs = append(execs, nodes.FlowExecutor{Name: ExecutorBrowser, Executor: nodes.AgentExecutor(b),
			Description: "an agent driving a real web browser (headless Chromium, JavaScript on): for steps that need one — pages that render with scripts, forms to fill and submit, clicking through a site, several tabs; it reports what it found with the pages as sources"})
	}
	flow, err := nodes.NewFlow(nodes.FlowConfig{Planner: planner, Executors: execs, Approve: fo.Approve, Checkpointer: fo.Checkpointer,
		MaxPlanSteps: fo.MaxPlanSteps, MaxRevisions: fo.MaxRevisions, ModelRetry: modelRetry(cfg)})
	if err != nil {
		return nil, &setupError{fmt.Errorf("flow: %w", err)}
	}
	names := make([]string, len(execs))
	for i, e := range execs {
		names[i] = e.Name
	}
	return &FlowSetup{Flow: flow, Agent: agent, Executors: names}, nil
}

// browserAgent is the browser executor: the agent's model with the
// agent's browser and terminate, the page state before each step.
func browserAgent(cfg *config.Config, a *AgentSetup, bt tools.Tool) (*nodes.Agent, error) {
	set, err := tools.NewCollection(bt, tools.NewTerminate())
	if err != nil {
		return nil, &setupError{fmt.Errorf("flow: browser executor: %w", err)}
	}
	ag, err := nodes.NewAgent(nodes.AgentConfig{Model: a.Model, Tools: set.WithCallTimeout(toolTimeout(cfg)), MaxSteps: cfg.Agent.MaxSteps,
		TextMode: cfg.Agent.TextMode, ModelRetry: modelRetry(cfg), States: []nodes.StateSource{a.Browser}})
	if err != nil {
		return nil, &setupError{fmt.Errorf("flow: browser executor: %w", err)}
	}
	return ag, nil
}

func execNote(a *AgentSetup) string {
	if HasExec(a.Tools) {
		return ", running Python and shell commands"
	}
	return ""
}

// SavedFlow is the result of the stored flow run on thread as of its newest
// checkpoint (nodes.Flow.Saved), read without models or tools.
func SavedFlow(ctx context.Context, cp graph.Checkpointer, thread string) (*nodes.FlowResult, error) {
	none := nodes.ExecutorFunc(func(context.Context, nodes.StepTask) (nodes.StepResult, error) {
		return nodes.StepResult{}, errors.New("no executor: the flow is only read")
	})
	// Approve: the graph with the review node, which a stored run may
	// wait in.
	f, err := nodes.NewFlow(nodes.FlowConfig{Planner: noModel{}, Executors: []nodes.FlowExecutor{{Name: ExecutorAgent, Executor: none}},
		Approve: true, Checkpointer: cp})
	if err != nil {
		return nil, err
	}
	return f.Saved(ctx, thread)
}

// ParsePlanAnswer reads a person's answer to a flow's plan review, as typed
// on the terminal or given with --answer or over HTTP: empty, "y", "yes",
// "ok" or "approve" approves the plan; "n" or "no", with a reason after it
// ("no: too risky"), rejects it; anything else is the new steps for what is
// not done yet, separated by ';'.
func ParsePlanAnswer(line string) nodes.PlanApproval {
	line = strings.TrimSpace(line)
	lower := strings.ToLower(line)
	switch {
	case line == "" || lower == "y" || lower == "yes" || lower == "ok" || lower == "approve":
		return nodes.PlanApproval{}
	case lower == "n" || lower == "no" || strings.HasPrefix(lower, "no ") || strings.HasPrefix(lower, "no:") || strings.HasPrefix(lower, "no,"):
		reason := strings.TrimSpace(strings.TrimLeft(line[min(2, len(line)):], ":, "))
		if lower == "n" {
			reason = ""
		}
		return nodes.PlanApproval{Reject: true, Reason: reason}
	}
	var steps []string
	for _, s := range strings.Split(line, ";") {
		if s = strings.TrimSpace(s); s != "" {
			steps = append(steps, s)
		}
	}
	return nodes.PlanApproval{Steps: steps}
}
