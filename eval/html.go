package eval

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
)

// HTML is the eval's page: self-contained (no script, no font, no CDN),
// with the configurations side by side, a cost-versus-quality scatter plot
// with the quality intervals, and per question a drill-down into each run:
// its answer, each statement with its label and the passage it was judged
// against, the correctness verdict and its reasons.
func HTML(r *Results) ([]byte, error) {
	v := pageView{R: r, Plot: scatter(r)}
	for _, m := range r.Metrics {
		row := metricRow{Info: m}
		for _, c := range r.Configurations {
			if a, ok := c.Aggregate(m.Name); ok {
				row.Cells = append(row.Cells, r.cell(m, a))
				row.Any = true
			} else {
				row.Cells = append(row.Cells, "–")
			}
		}
		if row.Any {
			v.Rows = append(v.Rows, row)
		}
	}
	for _, q := range r.Questions {
		qv := questionView{Q: q}
		for _, c := range r.Cases {
			if c.QuestionID == q.ID {
				qv.Cases = append(qv.Cases, c)
			}
		}
		v.Questions = append(v.Questions, qv)
	}
	var b bytes.Buffer
	if err := page.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("eval: writing the page: %w", err)
	}
	return b.Bytes(), nil
}

type pageView struct {
	R         *Results
	Rows      []metricRow
	Plot      *plot
	Questions []questionView
}

type metricRow struct {
	Info  MetricInfo
	Cells []string
	Any   bool
}

type questionView struct {
	Q     Question
	Cases []*Case
}

// plot is the scatter plot: a point per configuration, x its mean cost
// (tokens when a cost is unknown), y its mean quality with the interval.
type plot struct {
	XTitle, YTitle string
	Points         []point
	XTicks, YTicks []tick
}

type point struct {
	Name          string
	X, Y, Y0, Y1  float64 // in SVG coordinates
	Label         string
	Color         string
	LabelX, TextY float64
}

type tick struct {
	Pos   float64
	Label string
}

// Plot area, in SVG units.
const (
	plotW, plotH         = 640.0, 360.0
	padL, padR, padT, pb = 70.0, 30.0, 20.0, 50.0
)

var colors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"}

func scatter(r *Results) *plot {
	yMetric := MetricCorrectness
	if !r.anyAggregate(MetricCorrectness) {
		yMetric = MetricClaimSupport
	}
	xMetric := MetricCost
	for _, c := range r.Configurations {
		if _, ok := c.Aggregate(MetricCost); !ok {
			xMetric = MetricTokens
		}
	}
	xm, _ := r.Metric(xMetric)
	ym, _ := r.Metric(yMetric)
	p := &plot{XTitle: "mean " + xm.Title + " per question", YTitle: ym.Title + " (mean, 95 % interval)"}
	maxX := 0.0
	for _, c := range r.Configurations {
		if a, ok := c.Aggregate(xMetric); ok {
			maxX = math.Max(maxX, a.Mean)
		}
	}
	if maxX == 0 {
		maxX = 1
	}
	maxX *= 1.15
	sx := func(x float64) float64 { return padL + x/maxX*(plotW-padL-padR) }
	sy := func(y float64) float64 { return plotH - pb - y*(plotH-pb-padT) }
	for i := 0; i <= 4; i++ {
		x := maxX * float64(i) / 4
		p.XTicks = append(p.XTicks, tick{sx(x), xm.Format(x)})
		y := float64(i) / 4
		p.YTicks = append(p.YTicks, tick{sy(y), fmt.Sprintf("%.2f", y)})
	}
	for i, c := range r.Configurations {
		xa, okx := c.Aggregate(xMetric)
		ya, oky := c.Aggregate(yMetric)
		if !okx || !oky {
			continue
		}
		pt := point{Name: c.Name, X: sx(xa.Mean), Y: sy(ya.Mean), Y0: sy(ya.Low), Y1: sy(ya.High), Color: colors[i%len(colors)],
			Label: fmt.Sprintf("%s: %s, %s", c.Name, ym.Format(ya.Mean), xm.Format(xa.Mean))}
		pt.LabelX, pt.TextY = pt.X+8, pt.Y-6
		p.Points = append(p.Points, pt)
	}
	return p
}

func (r *Results) anyAggregate(name string) bool {
	for _, c := range r.Configurations {
		if _, ok := c.Aggregate(name); ok {
			return true
		}
	}
	return false
}

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"fmt": func(m MetricInfo, v float64) string { return m.Format(v) },
	"pct": func(v float64) string { return fmt.Sprintf("%.0f %%", v*100) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Eval: {{.R.Set}}</title>
<style>
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;padding:1rem 1.5rem;color:#1d1d1f;background:#fff}
h1{font-size:1.5rem;margin:.3rem 0}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{border:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f5f5f7}td.num{white-space:nowrap}.meta{color:#555}
details{border:1px solid #ddd;border-radius:6px;margin:.4rem 0;padding:.3rem .6rem}summary{cursor:pointer;font-weight:600}
.answer{white-space:pre-wrap;background:#fafafa;border-left:3px solid #ccc;padding:.4rem .6rem;font-size:.93rem}
.lbl{display:inline-block;border-radius:4px;padding:0 .35rem;font-size:.8rem;font-weight:600;color:#fff}
.supported{background:#2e7d32}.unsupported{background:#9e6a00}.contradicted{background:#c62828}.unreadable{background:#666}.uncited{background:#999}
.correct{background:#2e7d32}.partially_correct{background:#9e6a00}.incorrect{background:#c62828}
blockquote{margin:.2rem 0 .5rem 1rem;padding:.2rem .6rem;border-left:3px solid #bbb;color:#333;font-size:.88rem;white-space:pre-wrap;max-height:12rem;overflow:auto}
.err{color:#c62828}svg text{font:12px system-ui,sans-serif}
@media (prefers-color-scheme:dark){body{background:#111;color:#eee}th{background:#222}td,th,details{border-color:#444}.answer{background:#1a1a1a}blockquote{color:#ccc}svg text{fill:#eee}.meta{color:#aaa}}
</style></head><body>
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
