package eval

import (
	"bytes"
	"fmt"
	"html/template"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/research"
)

// The page is written in Go rather than with html/template: a template
// executed anywhere in a program keeps every exported method of every type
// in its binary (the linker cannot tell which ones the template calls),
// tens of megabytes in research's. This is the template the page was
// written with, which the Go code must match byte for byte — escaping
// included — on a page with every part and hostile text.
var referencePage = template.Must(template.New("page").Funcs(template.FuncMap{
	"fmt": func(m MetricInfo, v float64) string { return m.Format(v) },
	"pct": func(v float64) string { return fmt.Sprintf("%.0f %%", v*100) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Eval: {{.R.Set}}</title>
<style>
` + pageStyle + `</style></head><body>
<h1>Eval: {{.R.Set}}</h1>
<p class="meta">{{len .R.Questions}} questions × {{len .R.Configurations}} configurations × {{.R.Repeat}} run(s) · judge <strong>{{.R.Judge}}</strong> ({{.R.JudgePasses}} pass(es) per item) · {{.R.Created.Format "2006-01-02 15:04 UTC"}}</p>
<h2>Configurations</h2>
<p class="meta">Means over questions with bootstrap 95 % intervals{{if gt .R.Repeat 1}}; "runs a–b": the lowest and highest mean of one repeat{{end}}. ↑ higher is better, ↓ lower.</p>
<table id="configs"><thead><tr><th>Metric</th>{{range .R.Configurations}}<th>{{.Name}}</th>{{end}}</tr></thead><tbody>
{{range .Rows}}<tr><td title="{{.Info.How}}">{{.Info.Title}}{{if eq .Info.Better "higher"}} ↑{{else if eq .Info.Better "lower"}} ↓{{end}}</td>{{range .Cells}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}<tr><td>Runs (failed, not run)</td>{{range .R.Configurations}}<td class="num">{{.Runs}} ({{.Failed}}, {{.Pending}})</td>{{end}}</tr>
</tbody></table>
{{range .R.Configurations}}{{if .Description}}<p class="meta"><strong>{{.Name}}</strong>: {{.Description}}</p>{{end}}{{end}}
<h2>Cost and quality</h2>
{{with .Plot}}<svg id="scatter" viewBox="0 0 640 360" width="640" height="360" role="img" aria-label="{{.YTitle}} against {{.XTitle}}">
<rect x="70" y="20" width="540" height="290" fill="none" stroke="#999"/>
{{range .XTicks}}<line x1="{{.Pos}}" y1="310" x2="{{.Pos}}" y2="315" stroke="#999"/><text x="{{.Pos}}" y="328" text-anchor="middle">{{.Label}}</text>
{{end}}{{range .YTicks}}<line x1="65" y1="{{.Pos}}" x2="610" y2="{{.Pos}}" stroke="#ddd"/><text x="60" y="{{.Pos}}" text-anchor="end" dominant-baseline="middle">{{.Label}}</text>
{{end}}<text x="340" y="350" text-anchor="middle">{{.XTitle}}</text>
<text x="14" y="165" text-anchor="middle" transform="rotate(-90 14 165)">{{.YTitle}}</text>
{{range .Points}}<g><title>{{.Label}}</title><line x1="{{.X}}" y1="{{.Y0}}" x2="{{.X}}" y2="{{.Y1}}" stroke="{{.Color}}" stroke-width="2"/>
<circle cx="{{.X}}" cy="{{.Y}}" r="6" fill="{{.Color}}"/><text x="{{.LabelX}}" y="{{.TextY}}">{{.Name}}</text></g>
{{end}}</svg>{{end}}
<h2>Questions</h2>
{{range .Questions}}<details class="question"><summary>{{.Q.ID}}: {{.Q.Question}}</summary>
{{if .Q.Answer}}<p><strong>Reference:</strong> {{.Q.Answer}}</p>{{end}}
{{if .Q.Sources}}<p><strong>Expected sources:</strong> {{range .Q.Sources}}<code>{{.}}</code> {{end}}</p>{{end}}
{{range .Cases}}<details class="case"><summary>{{.Config}} · run {{.Repeat}}{{with .Correctness}} · <span class="lbl {{.Verdict}}">{{.Verdict}}</span>{{end}}{{with .Claims}} · {{.Supported}}/{{.Cited}} cited statements supported{{end}}</summary>
{{if .Error}}<p class="err">Run failed: {{.Error}}</p>{{end}}{{if .ScoreError}}<p class="err">Scoring failed: {{.ScoreError}}</p>{{end}}
{{with .Outcome}}{{with .Report}}<div class="answer">{{.Answer}}</div>{{end}}{{end}}
{{with .Correctness}}<p><strong>Correctness:</strong> <span class="lbl {{.Verdict}}">{{.Verdict}}</span> (agreement {{pct .Agreement}}){{range .Reasons}} — {{.}}{{end}}</p>{{end}}
{{with .Claims}}<ol class="statements">{{range .Statements}}<li>{{if .Label}}<span class="lbl {{.Label}}">{{.Label}}</span>{{else}}<span class="lbl uncited">no citation</span>{{end}} {{.Text}}
{{range .Judgments}}<div>[{{.Source}}] <a href="{{.URL}}">{{.URL}}</a>: <span class="lbl {{.Label}}">{{.Label}}</span>{{if .Agreement}} (agreement {{pct .Agreement}}){{end}}{{range .Reasons}} — {{.}}{{end}}</div>
{{if .Passage}}<blockquote>{{.Passage}}</blockquote>{{end}}{{end}}</li>
{{end}}</ol>{{end}}
{{with .Integrity}}{{if .NotGathered}}<p class="err">Cited but not gathered: {{range .NotGathered}}{{.}} {{end}}</p>{{end}}{{if .Unreadable}}<p>Cited pages not readable: {{range .Unreadable}}{{.}} {{end}}</p>{{end}}{{end}}
</details>
{{end}}</details>
{{end}}
<h2>How the numbers are computed</h2>
<ul>{{range .R.Metrics}}<li><strong>{{.Title}}</strong> (<code>{{.Name}}</code>): {{.How}}</li>
{{end}}</ul>
<p>Claim rubric: {{.R.ClaimRubric}}</p><p>Correctness rubric: {{.R.CorrectnessRubric}}</p>
</body></html>
`))

// TestHTMLMatchesTheTemplate compares HTML with the template it replaced,
// on a page that has every part (failed runs, judgments, passages,
// integrity problems) and text that needs escaping everywhere.
func TestHTMLMatchesTheTemplate(t *testing.T) {
	for _, r := range []*Results{hostileResults(), {Set: "empty", Repeat: 1}} {
		got, err := HTML(r)
		require.NoError(t, err)
		v := view(r)
		var want bytes.Buffer
		require.NoError(t, referencePage.Execute(&want, v))
		if !bytes.Equal(want.Bytes(), got) {
			w, g := want.String(), string(got)
			i := 0
			for i < len(w) && i < len(g) && w[i] == g[i] {
				i++
			}
			t.Fatalf("the page differs from the template's at byte %d:\ntemplate: %q\ngot:      %q", i, excerpt(w, i), excerpt(g, i))
		}
	}
}

func excerpt(s string, i int) string {
	return s[max(0, i-80):min(len(s), i+80)]
}

// hostile is text with everything HTML escapes, a NUL, invalid UTF-8
// and non-ASCII.
const hostile = "<b>\"it's\" & 1+1</b> \x00 \xff é — \ufdd0"

func hostileResults() *Results {
	agg := func(metric string, mean float64) Aggregate {
		return Aggregate{Metric: metric, Mean: mean, Low: mean * 0.8, High: mean * 1.1, N: 2}
	}
	r := &Results{
		Created: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), Set: "set " + hostile, Judge: "judge " + hostile, JudgePasses: 3, Repeat: 2,
		ClaimRubric: "claims " + hostile, CorrectnessRubric: "correct " + hostile,
		Metrics: append(BuiltinMetrics(), MetricInfo{Name: "custom", Title: "custom " + hostile, How: "how " + hostile, Better: "lower", Unit: "count"}),
		Questions: []Question{
			{ID: "q1" + hostile, Question: "why " + hostile, Answer: "because " + hostile, Sources: []string{"https://a.example/x?y=1&z=2", hostile}},
			{ID: "q2", Question: "plain"},
		},
	}
	for i, name := range []string{"base " + hostile, "other", "third"} {
		c := ConfigSummary{Name: name, Description: "", Runs: 4 + i, Failed: i, Pending: 1}
		if i == 0 {
			c.Description = "described " + hostile
		}
		c.Aggregates = []Aggregate{agg(MetricCorrectness, 0.5+float64(i)/10), agg(MetricTokens, 12345.678*float64(i+1)), agg("custom", 2.5)}
		if i != 2 {
			c.Aggregates = append(c.Aggregates, agg(MetricCost, 0.0123*float64(i+1)))
		}
		r.Configurations = append(r.Configurations, c)
	}
	r.Cases = []*Case{
		{Config: "base " + hostile, QuestionID: "q1" + hostile, Repeat: 1, Error: "failed " + hostile, ScoreError: "score " + hostile},
		{Config: "other", QuestionID: "q1" + hostile, Repeat: 2,
			Outcome:     &Outcome{Report: &research.Report{Answer: "answer " + hostile}},
			Correctness: &Correctness{Verdict: "partially_correct", Agreement: 2.0 / 3, Reasons: []string{"r1 " + hostile, "r2"}},
			Claims: &Claims{Cited: 3, Supported: 1, Statements: []JudgedStatement{
				{Statement: Statement{Text: "s1 " + hostile}, Label: "supported", Judgments: []Judgement{
					{Source: 1, URL: "https://a.example/p a(t)h'?q=1&r=%41%zz+", Label: "supported", Agreement: 1, Reasons: []string{hostile}, Passage: "passage " + hostile},
					{Source: 2, URL: "javascript:alert(1)", Label: "contradicted"},
					{Source: 3, URL: "/relative/" + hostile, Label: "unreadable", Agreement: 0.5},
					{Source: 4, URL: "MAILTO:x@example.com", Label: "supported"},
				}},
				{Statement: Statement{Text: "uncited"}},
			}},
			Integrity: Integrity{NotGathered: []string{"https://ng.example/" + hostile, "b"}, Unreadable: []string{hostile}},
		},
		{Config: "third", QuestionID: "q2", Repeat: 1, Outcome: &Outcome{}, Claims: &Claims{}, Integrity: Integrity{Unreadable: []string{"u"}}},
		{Config: "third", QuestionID: "q2", Repeat: 2, Outcome: &Outcome{Report: &research.Report{}}},
	}
	return r
}
