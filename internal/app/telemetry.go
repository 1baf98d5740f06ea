package app

import (
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/telemetry"
	"github.com/deepgraph/deepgraph/tools"
)

// traceModels wraps every role's model in tel's spans (telemetry.Model),
// under the role's spec. A nil tel leaves the models as they are.
func traceModels(tel *telemetry.Telemetry, m *Models) {
	if tel == nil {
		return
	}
	for role, model := range m.byRole {
		m.byRole[role] = tel.Model(model, m.specs[role], role)
	}
}

// tracedBackend returns b with its searcher and page reader wrapped in
// tel's spans: a copy, so that a back end a Pool shares stays as it is.
// Gemini's grounded search happens inside the model call, whose span it
// is. A nil tel returns b.
func tracedBackend(tel *telemetry.Telemetry, b *Backend) *Backend {
	if tel == nil {
		return b
	}
	out := *b
	out.Searcher = tel.Searcher(b.Searcher)
	if sb, ok := b.Backend.(*research.SearchBackend); ok {
		traced := *sb
		traced.Searcher = tel.Searcher(sb.Searcher)
		if r, ok := sb.Reader.(telemetry.PageReader); ok {
			traced.Reader = tel.Reader(r)
		}
		out.Backend = &traced
	}
	return &out
}

// traceTools returns c with every tool wrapped in tel's spans
// ("execute_tool NAME"), in the same order; a tool with its own bound
// (tools.Bounded: deep_research, ask_human) keeps it (telemetry.Tool
// sees to it). Call timeouts are the new collection's default: set them
// after. A nil tel returns c.
func traceTools(tel *telemetry.Telemetry, c *tools.Collection) (*tools.Collection, error) {
	if tel == nil || c == nil {
		return c, nil
	}
	return tools.NewCollection(tel.Tools(c.Tools())...)
}
