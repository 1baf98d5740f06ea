package main

import (
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/research"
)

// jsonDocument renders rep, of the run named by run, as the JSON report
// (app.ReportDoc).
func jsonDocument(run app.RunRef, rep *research.Report, models map[string]string, runErr error) ([]byte, error) {
	return app.PricedResearchDocument(run, rep, models, nil, runErr)
}
