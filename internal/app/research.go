package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/telemetry"
)

// Research is a researcher built from a configuration, with its models and
// back end.
type Research struct {
	*research.Researcher
	Models  *Models
	Backend *Backend
	// owns: Close closes the back end (not one a Pool shares).
	owns bool
}

// Close releases the back end, unless a Pool shares it.
func (r *Research) Close() {
	if r.owns {
		r.Backend.Close()
	}
}

// NewResearch opens the models, chooses and opens the back end, and builds
// the researcher, storing its runs in cp when it is not nil. Setup failures
// match ErrSetup (and ErrNoModel when no model is configured at all).
func NewResearch(ctx context.Context, cfg *config.Config, logger *slog.Logger, cp graph.Checkpointer) (*Research, error) {
	models, err := OpenModels(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}
	tel := telemetry.From(ctx)
	traceModels(tel, models)
	plan, err := ChooseBackend(cfg, models.Spec(llm.RoleResearch))
	if err != nil {
		return nil, err
	}
	if logger != nil {
		logger.Debug("research back end chosen", "backend", string(plan.Kind), "providers", plan.Providers, "why", plan.Why)
	}
	backend, err := OpenBackend(ctx, cfg, plan, logger)
	if err != nil {
		return nil, err
	}
	backend = tracedBackend(tel, backend)
	r, err := newResearch(cfg, models, backend, cp, true)
	if err != nil {
		backend.Close()
		return nil, err
	}
	return r, nil
}

func newResearch(cfg *config.Config, models *Models, backend *Backend, cp graph.Checkpointer, owns bool) (*Research, error) {
	byRole := map[string]llm.Model{}
	for _, role := range Roles {
		byRole[role] = models.Model(role)
	}
	if err := costLimit(cfg, models.Specs(), byRole); err != nil {
		return nil, err
	}
	r, err := research.New(research.Config{
		QueryModel:      byRole[llm.RoleQuery],
		ResearchModel:   byRole[llm.RoleResearch],
		ReflectionModel: byRole[llm.RoleReflection],
		AnswerModel:     byRole[llm.RoleAnswer],
		Backend:         backend,
		InitialQueries:  cfg.InitialQueries,
		MaxLoops:        cfg.MaxLoops,
		Checkpointer:    cp,
		ModelRetry:      modelRetry(cfg),
		ContextBudget:   cfg.ContextBudget,
		ResearchBudget:  cfg.ResearchBudget,
	})
	if err != nil {
		return nil, &setupError{err}
	}
	return &Research{Researcher: r, Models: models, Backend: backend, owns: owns}, nil
}

// Mermaid draws the deep-search graph. It needs no configuration: the graph's
// shape does not depend on the models or the back end.
func Mermaid() (string, error) {
	r, err := research.New(research.Config{QueryModel: noModel{}, Backend: research.GeminiBackend{}})
	if err != nil {
		return "", err
	}
	return r.Graph().Mermaid(), nil
}

// SavedReport rebuilds the report of a stored research thread from its
// newest checkpoint, without models: for a run that stopped before it could
// record its report.
func SavedReport(ctx context.Context, cp graph.Checkpointer, thread, backend string) (*research.Report, error) {
	r, err := research.New(research.Config{QueryModel: noModel{}, Backend: namedBackend(backend), Checkpointer: cp})
	if err != nil {
		return nil, err
	}
	return r.Saved(ctx, thread)
}

// namedBackend stands in for a back end where only its name is needed.
type namedBackend string

func (b namedBackend) Name() string { return string(b) }

func (b namedBackend) Research(context.Context, llm.Model, research.Query) (research.Finding, error) {
	return research.Finding{}, errors.New("no back end: the report is only read")
}

// ParseReviewAnswer reads a person's answer to a query review, as typed on
// the terminal or given with --answer: empty, "ok" or "yes" approves the
// queries; "stop" writes the answer from what was found; a JSON object is a
// research.ReviewAnswer; anything else is the new queries, separated by ";"
// or new lines.
func ParseReviewAnswer(text string) (research.ReviewAnswer, error) {
	text = strings.TrimSpace(text)
	switch strings.ToLower(text) {
	case "", "ok", "y", "yes", "approve":
		return research.ReviewAnswer{}, nil
	case "stop":
		return research.ReviewAnswer{Stop: true}, nil
	}
	if strings.HasPrefix(text, "{") {
		var a research.ReviewAnswer
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return a, fmt.Errorf(`the answer is not a review answer: %w; answer "ok", "stop", queries separated by ";", or {"queries":[…],"stop":false}`, err)
		}
		return a, nil
	}
	var qs []string
	for _, q := range strings.FieldsFunc(text, func(r rune) bool { return r == ';' || r == '\n' }) {
		if q = strings.TrimSpace(q); q != "" {
			qs = append(qs, q)
		}
	}
	return research.ReviewAnswer{Queries: qs}, nil
}

// noModel stands in for a model where the graph is only drawn.
type noModel struct{}

func (noModel) Generate(context.Context, []schemas.Message, ...llm.Option) (*llm.Response, error) {
	return nil, errors.New("no model: the graph is only drawn")
}
