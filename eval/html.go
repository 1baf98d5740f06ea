package eval

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// HTML is the eval's page: self-contained (no script, no font, no CDN),
// with the configurations side by side, a cost-versus-quality scatter plot
// with the quality intervals, and per question a drill-down into each run:
// its answer, each statement with its label and the passage it was judged
// against, the correctness verdict and its reasons.
//
// It is written in Go, escaped as html/template escapes, rather than with
// a template: a template executed anywhere in a program keeps every
// exported method of every type in its binary (the linker cannot tell
// which ones it calls), tens of megabytes in research's. The test compares
// it with the template it replaced.
func HTML(r *Results) ([]byte, error) {
	var w pageWriter
	w.page(view(r))
	return w.b.Bytes(), nil
}

// view is what the page shows of r.
func view(r *Results) pageView {
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
	return v
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

// pageWriter writes the page into b.
type pageWriter struct{ b bytes.Buffer }

// raw writes s as it is: the page's own markup.
func (w *pageWriter) raw(s string) { w.b.WriteString(s) }

// text writes s escaped for HTML text and quoted attribute values.
func (w *pageWriter) text(s string) { w.b.WriteString(escapeHTML(s)) }

// val writes v as fmt.Sprint prints it, escaped.
func (w *pageWriter) val(v any) { w.text(fmt.Sprint(v)) }

// url writes s as a link's address: "#ZgotmplZ" if its scheme is not
// http, https or mailto, percent-encoded where a URL may not hold the
// byte, escaped for the attribute.
func (w *pageWriter) url(s string) {
	if !safeURL(s) {
		s = "#ZgotmplZ"
	}
	w.text(normalizeURL(s))
}

// escapeHTML escapes what html/template escapes in text and quoted
// attributes: " & ' + < > as entities and NUL as U+FFFD.
func escapeHTML(s string) string {
	var b strings.Builder
	written := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		var repl string
		switch r {
		case 0:
			repl = "\uFFFD"
		case '"':
			repl = "&#34;"
		case '&':
			repl = "&amp;"
		case '\'':
			repl = "&#39;"
		case '+':
			repl = "&#43;"
		case '<':
			repl = "&lt;"
		case '>':
			repl = "&gt;"
		}
		if repl != "" {
			b.WriteString(s[written:i])
			b.WriteString(repl)
			written = i + n
		}
		i += n
	}
	if written == 0 {
		return s
	}
	b.WriteString(s[written:])
	return b.String()
}

// safeURL says whether s has no scheme, or http, https or mailto.
func safeURL(s string) bool {
	if scheme, _, ok := strings.Cut(s, ":"); ok && !strings.Contains(scheme, "/") {
		return strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https") || strings.EqualFold(scheme, "mailto")
	}
	return true
}

// normalizeURL percent-encodes the bytes of s that are neither unreserved
// nor reserved in a URL (RFC 3986), and ' ( ), keeping valid escapes.
func normalizeURL(s string) string {
	var b strings.Builder
	written := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case strings.IndexByte("!#$&*+,/:;=?@[]-._~", c) >= 0,
			'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			continue
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			continue
		}
		b.WriteString(s[written:i])
		fmt.Fprintf(&b, "%%%02x", c)
		written = i + 1
	}
	if written == 0 {
		return s
	}
	b.WriteString(s[written:])
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// pct is a share as a whole percentage: "67 %".
func pct(v float64) string { return fmt.Sprintf("%.0f %%", v*100) }

func (w *pageWriter) page(v pageView) {
	r := v.R
	w.raw(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Eval: `)
	w.text(r.Set)
	w.raw(`</title>
<style>
`)
	w.raw(pageStyle)
	w.raw(`</style></head><body>
<h1>Eval: `)
	w.text(r.Set)
	w.raw(`</h1>
<p class="meta">`)
	w.val(len(r.Questions))
	w.raw(` questions × `)
	w.val(len(r.Configurations))
	w.raw(` configurations × `)
	w.val(r.Repeat)
	w.raw(` run(s) · judge <strong>`)
	w.text(r.Judge)
	w.raw(`</strong> (`)
	w.val(r.JudgePasses)
	w.raw(` pass(es) per item) · `)
	w.text(r.Created.Format("2006-01-02 15:04 UTC"))
	w.raw(`</p>
<h2>Configurations</h2>
<p class="meta">Means over questions with bootstrap 95 % intervals`)
	if r.Repeat > 1 {
		w.raw(`; "runs a–b": the lowest and highest mean of one repeat`)
	}
	w.raw(`. ↑ higher is better, ↓ lower.</p>
<table id="configs"><thead><tr><th>Metric</th>`)
	for _, c := range r.Configurations {
		w.raw(`<th>`)
		w.text(c.Name)
		w.raw(`</th>`)
	}
	w.raw(`</tr></thead><tbody>
`)
	for _, row := range v.Rows {
		w.raw(`<tr><td title="`)
		w.text(row.Info.How)
		w.raw(`">`)
		w.text(row.Info.Title)
		switch row.Info.Better {
		case "higher":
			w.raw(` ↑`)
		case "lower":
			w.raw(` ↓`)
		}
		w.raw(`</td>`)
		for _, cell := range row.Cells {
			w.raw(`<td class="num">`)
			w.text(cell)
			w.raw(`</td>`)
		}
		w.raw(`</tr>
`)
	}
	w.raw(`<tr><td>Runs (failed, not run)</td>`)
	for _, c := range r.Configurations {
		w.raw(`<td class="num">`)
		w.val(c.Runs)
		w.raw(` (`)
		w.val(c.Failed)
		w.raw(`, `)
		w.val(c.Pending)
		w.raw(`)</td>`)
	}
	w.raw(`</tr>
</tbody></table>
`)
	for _, c := range r.Configurations {
		if c.Description != "" {
			w.raw(`<p class="meta"><strong>`)
			w.text(c.Name)
			w.raw(`</strong>: `)
			w.text(c.Description)
			w.raw(`</p>`)
		}
	}
	w.raw(`
<h2>Cost and quality</h2>
`)
	if p := v.Plot; p != nil {
		w.plot(p)
	}
	w.raw(`
<h2>Questions</h2>
`)
	for _, q := range v.Questions {
		w.question(q)
	}
	w.raw(`
<h2>How the numbers are computed</h2>
<ul>`)
	for _, m := range r.Metrics {
		w.raw(`<li><strong>`)
		w.text(m.Title)
		w.raw(`</strong> (<code>`)
		w.text(m.Name)
		w.raw(`</code>): `)
		w.text(m.How)
		w.raw(`</li>
`)
	}
	w.raw(`</ul>
<p>Claim rubric: `)
	w.text(r.ClaimRubric)
	w.raw(`</p><p>Correctness rubric: `)
	w.text(r.CorrectnessRubric)
	w.raw(`</p>
</body></html>
`)
}

func (w *pageWriter) plot(p *plot) {
	w.raw(`<svg id="scatter" viewBox="0 0 640 360" width="640" height="360" role="img" aria-label="`)
	w.text(p.YTitle)
	w.raw(` against `)
	w.text(p.XTitle)
	w.raw(`">
<rect x="70" y="20" width="540" height="290" fill="none" stroke="#999"/>
`)
	for _, t := range p.XTicks {
		w.raw(`<line x1="`)
		w.val(t.Pos)
		w.raw(`" y1="310" x2="`)
		w.val(t.Pos)
		w.raw(`" y2="315" stroke="#999"/><text x="`)
		w.val(t.Pos)
		w.raw(`" y="328" text-anchor="middle">`)
		w.text(t.Label)
		w.raw(`</text>
`)
	}
	for _, t := range p.YTicks {
		w.raw(`<line x1="65" y1="`)
		w.val(t.Pos)
		w.raw(`" x2="610" y2="`)
		w.val(t.Pos)
		w.raw(`" stroke="#ddd"/><text x="60" y="`)
		w.val(t.Pos)
		w.raw(`" text-anchor="end" dominant-baseline="middle">`)
		w.text(t.Label)
		w.raw(`</text>
`)
	}
	w.raw(`<text x="340" y="350" text-anchor="middle">`)
	w.text(p.XTitle)
	w.raw(`</text>
<text x="14" y="165" text-anchor="middle" transform="rotate(-90 14 165)">`)
	w.text(p.YTitle)
	w.raw(`</text>
`)
	for _, pt := range p.Points {
		w.raw(`<g><title>`)
		w.text(pt.Label)
		w.raw(`</title><line x1="`)
		w.val(pt.X)
		w.raw(`" y1="`)
		w.val(pt.Y0)
		w.raw(`" x2="`)
		w.val(pt.X)
		w.raw(`" y2="`)
		w.val(pt.Y1)
		w.raw(`" stroke="`)
		w.text(pt.Color)
		w.raw(`" stroke-width="2"/>
<circle cx="`)
		w.val(pt.X)
		w.raw(`" cy="`)
		w.val(pt.Y)
		w.raw(`" r="6" fill="`)
		w.text(pt.Color)
		w.raw(`"/><text x="`)
		w.val(pt.LabelX)
		w.raw(`" y="`)
		w.val(pt.TextY)
		w.raw(`">`)
		w.text(pt.Name)
		w.raw(`</text></g>
`)
	}
	w.raw(`</svg>`)
}

func (w *pageWriter) question(q questionView) {
	w.raw(`<details class="question"><summary>`)
	w.text(q.Q.ID)
	w.raw(`: `)
	w.text(q.Q.Question)
	w.raw(`</summary>
`)
	if q.Q.Answer != "" {
		w.raw(`<p><strong>Reference:</strong> `)
		w.text(q.Q.Answer)
		w.raw(`</p>`)
	}
	w.raw(`
`)
	if len(q.Q.Sources) > 0 {
		w.raw(`<p><strong>Expected sources:</strong> `)
		for _, s := range q.Q.Sources {
			w.raw(`<code>`)
			w.text(s)
			w.raw(`</code> `)
		}
		w.raw(`</p>`)
	}
	w.raw(`
`)
	for _, c := range q.Cases {
		w.caseDetails(c)
	}
	w.raw(`</details>
`)
}

func (w *pageWriter) caseDetails(c *Case) {
	w.raw(`<details class="case"><summary>`)
	w.text(c.Config)
	w.raw(` · run `)
	w.val(c.Repeat)
	if k := c.Correctness; k != nil {
		w.raw(` · <span class="lbl `)
		w.text(k.Verdict)
		w.raw(`">`)
		w.text(k.Verdict)
		w.raw(`</span>`)
	}
	if cl := c.Claims; cl != nil {
		w.raw(` · `)
		w.val(cl.Supported)
		w.raw(`/`)
		w.val(cl.Cited)
		w.raw(` cited statements supported`)
	}
	w.raw(`</summary>
`)
	if c.Error != "" {
		w.raw(`<p class="err">Run failed: `)
		w.text(c.Error)
		w.raw(`</p>`)
	}
	if c.ScoreError != "" {
		w.raw(`<p class="err">Scoring failed: `)
		w.text(c.ScoreError)
		w.raw(`</p>`)
	}
	w.raw(`
`)
	if o := c.Outcome; o != nil && o.Report != nil {
		w.raw(`<div class="answer">`)
		w.text(o.Report.Answer)
		w.raw(`</div>`)
	}
	w.raw(`
`)
	if k := c.Correctness; k != nil {
		w.raw(`<p><strong>Correctness:</strong> <span class="lbl `)
		w.text(k.Verdict)
		w.raw(`">`)
		w.text(k.Verdict)
		w.raw(`</span> (agreement `)
		w.text(pct(k.Agreement))
		w.raw(`)`)
		for _, reason := range k.Reasons {
			w.raw(` — `)
			w.text(reason)
		}
		w.raw(`</p>`)
	}
	w.raw(`
`)
	if cl := c.Claims; cl != nil {
		w.raw(`<ol class="statements">`)
		for _, s := range cl.Statements {
			w.statement(s)
		}
		w.raw(`</ol>`)
	}
	w.raw(`
`)
	in := c.Integrity
	if len(in.NotGathered) > 0 {
		w.raw(`<p class="err">Cited but not gathered: `)
		for _, u := range in.NotGathered {
			w.text(u)
			w.raw(` `)
		}
		w.raw(`</p>`)
	}
	if len(in.Unreadable) > 0 {
		w.raw(`<p>Cited pages not readable: `)
		for _, u := range in.Unreadable {
			w.text(u)
			w.raw(` `)
		}
		w.raw(`</p>`)
	}
	w.raw(`
</details>
`)
}

func (w *pageWriter) statement(s JudgedStatement) {
	w.raw(`<li>`)
	if s.Label != "" {
		w.raw(`<span class="lbl `)
		w.text(s.Label)
		w.raw(`">`)
		w.text(s.Label)
		w.raw(`</span>`)
	} else {
		w.raw(`<span class="lbl uncited">no citation</span>`)
	}
	w.raw(` `)
	w.text(s.Text)
	w.raw(`
`)
	for _, j := range s.Judgments {
		w.raw(`<div>[`)
		w.val(j.Source)
		w.raw(`] <a href="`)
		w.url(j.URL)
		w.raw(`">`)
		w.text(j.URL)
		w.raw(`</a>: <span class="lbl `)
		w.text(j.Label)
		w.raw(`">`)
		w.text(j.Label)
		w.raw(`</span>`)
		if j.Agreement != 0 {
			w.raw(` (agreement `)
			w.text(pct(j.Agreement))
			w.raw(`)`)
		}
		for _, reason := range j.Reasons {
			w.raw(` — `)
			w.text(reason)
		}
		w.raw(`</div>
`)
		if j.Passage != "" {
			w.raw(`<blockquote>`)
			w.text(j.Passage)
			w.raw(`</blockquote>`)
		}
	}
	w.raw(`</li>
`)
}

// pageStyle is the page's style sheet.
const pageStyle = `body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;padding:1rem 1.5rem;color:#1d1d1f;background:#fff}
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
`
