package main

import (
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/research"
)

// jsonDocument renders rep as the JSON report (app.ReportDoc).
func jsonDocument(rep *research.Report, models map[string]string, runErr error) ([]byte, error) {
	return app.ResearchDocument(rep, models, runErr)
}
