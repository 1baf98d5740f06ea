package app

import (
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/telemetry"
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

// traceBackend wraps the back end's searcher and page reader in tel's spans.
// Gemini's grounded search happens inside the model call, whose span it is.
func traceBackend(tel *telemetry.Telemetry, b *Backend) {
	if tel == nil {
		return
	}
	b.Searcher = tel.Searcher(b.Searcher)
	if sb, ok := b.Backend.(*research.SearchBackend); ok {
		traced := *sb
		traced.Searcher = tel.Searcher(sb.Searcher)
		if r, ok := sb.Reader.(telemetry.PageReader); ok {
			traced.Reader = tel.Reader(r)
		}
		b.Backend = &traced
	}
}
