package app

import (
	"context"
	"errors"
	"log/slog"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/schemas"
)

// Research is a researcher built from a configuration, with its models and
// back end.
type Research struct {
	*research.Researcher
	Models  *Models
	Backend *Backend
}

// Close releases the back end.
func (r *Research) Close() { r.Backend.Close() }

// NewResearch opens the models, chooses and opens the back end, and builds
// the researcher. Setup failures match ErrSetup (and ErrNoModel when no
// model is configured at all).
func NewResearch(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*Research, error) {
	models, err := OpenModels(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}
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
	r, err := research.New(research.Config{
		QueryModel:      models.Model(llm.RoleQuery),
		ResearchModel:   models.Model(llm.RoleResearch),
		ReflectionModel: models.Model(llm.RoleReflection),
		AnswerModel:     models.Model(llm.RoleAnswer),
		Backend:         backend,
		InitialQueries:  cfg.InitialQueries,
		MaxLoops:        cfg.MaxLoops,
	})
	if err != nil {
		backend.Close()
		return nil, &setupError{err}
	}
	return &Research{Researcher: r, Models: models, Backend: backend}, nil
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

// noModel stands in for a model where the graph is only drawn.
type noModel struct{}

func (noModel) Generate(context.Context, []schemas.Message, ...llm.Option) (*llm.Response, error) {
	return nil, errors.New("no model: the graph is only drawn")
}
