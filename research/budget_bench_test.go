package research_test

import (
	"context"
	"testing"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
)

// BenchmarkTokensByRole reports the input (prompt) tokens of one run per
// role at each effort, every loop used (each reflection asks for as many
// new follow-ups as the effort's queries), with summaries of 3,400
// characters and five 400-character snippets per search; tokens are
// prompt characters ÷ 4. max-reflection-chars and answer-chars are the
// longest reflection prompt and the answer prompt.
func BenchmarkTokensByRole(b *testing.B) {
	for _, e := range research.Efforts() {
		b.Run(e.Name, func(b *testing.B) {
			var rep *research.Report
			var m *promptModel
			for b.Loop() {
				var err error
				rep, m, err = fullRun(context.Background(), e, 2200, research.Config{})
				if err != nil {
					b.Fatal(err)
				}
			}
			total := 0
			for _, role := range []string{llm.RoleQuery, llm.RoleResearch, llm.RoleReflection, research.RoleCompaction, llm.RoleAnswer} {
				t := rep.Usage[role].Usage.PromptTokens
				total += t
				b.ReportMetric(float64(t), role+"-in-tokens/run")
			}
			b.ReportMetric(float64(total), "in-tokens/run")
			b.ReportMetric(float64(m.maxChars(llm.RoleReflection)), "max-reflection-chars")
			b.ReportMetric(float64(m.maxChars(llm.RoleAnswer)), "answer-chars")
		})
	}
}
