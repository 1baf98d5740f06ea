package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/deepgraph/deepgraph/internal/atomicfile"
	"github.com/deepgraph/deepgraph/llm"
)

// The files WriteFiles writes.
const (
	ResultsFile = "results.json"
	SummaryFile = "summary.md"
	PageFile    = "index.html"
)

// WriteFiles writes results.json, summary.md and index.html to dir, each
// whole or not at all.
func WriteFiles(dir string, r *Results) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("eval: encoding the results: %w", err)
	}
	page, err := HTML(r)
	if err != nil {
		return err
	}
	for name, content := range map[string][]byte{ResultsFile: append(data, '\n'), SummaryFile: []byte(r.Markdown()), PageFile: page} {
		if err := atomicfile.Write(filepath.Join(dir, name), content, 0o644); err != nil {
			return fmt.Errorf("eval: writing %s: %w", name, err)
		}
	}
	return nil
}

// ReadResults reads a results.json (or the directory holding one).
func ReadResults(path string) (*Results, error) {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		path = filepath.Join(path, ResultsFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("eval: reading results: %w", err)
	}
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("eval: %s is not a results.json: %w", path, err)
	}
	if r.Schema != ResultsSchema {
		if r.Schema == "" {
			return nil, fmt.Errorf("eval: %s is not a results.json (no schema field): give the results.json an eval wrote, or its directory", path)
		}
		return nil, fmt.Errorf("eval: %s has schema %q; this version reads %q", path, r.Schema, ResultsSchema)
	}
	return &r, nil
}

// Metric returns the description of metric name.
func (r *Results) Metric(name string) (MetricInfo, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return MetricInfo{}, false
}

// Format writes a value of the metric in its unit: "0.82", "$0.0042",
// "12,345", "3.2s".
func (m MetricInfo) Format(v float64) string {
	switch m.Unit {
	case usdUnit:
		return llm.USD(v)
	case "tokens":
		return thousands(int(v + 0.5))
	case "seconds":
		return strconv.FormatFloat(v, 'f', 1, 64) + "s"
	case count:
		if v == float64(int(v)) {
			return strconv.Itoa(int(v))
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// arrow is a metric's direction: ↑ higher is better, ↓ lower.
func (m MetricInfo) arrow() string {
	switch m.Better {
	case "higher":
		return " ↑"
	case "lower":
		return " ↓"
	}
	return ""
}

// cell is an aggregate as a table cell: "0.82 [0.71, 0.90]", with the
// spread across repeats when there are several: "· runs 0.80–0.84".
func (r *Results) cell(m MetricInfo, a Aggregate) string {
	s := m.Format(a.Mean)
	if a.N > 1 {
		s += " [" + m.Format(a.Low) + ", " + m.Format(a.High) + "]"
	}
	if r.Repeat > 1 {
		s += " · runs " + m.Format(a.RepeatMin) + "–" + m.Format(a.RepeatMax)
	}
	return s
}

// Markdown is summary.md: the configurations side by side, usage per
// role, how each number is computed, and a line per question.
func (r *Results) Markdown() string {
	var b bytes.Buffer
	set := r.Set
	if set == "" {
		set = "question set"
	}
	fmt.Fprintf(&b, "# Eval: %s\n\n", mdCell(set))
	fmt.Fprintf(&b, "%d questions × %d configurations × %d %s · judge **%s** (%d %s per item) · %s\n\n",
		len(r.Questions), len(r.Configurations), r.Repeat, plural(r.Repeat, "run", "runs"), mdCell(r.Judge), r.JudgePasses,
		plural(r.JudgePasses, "pass", "passes"), r.Created.Format("2006-01-02 15:04 UTC"))
	b.WriteString("Means over questions with bootstrap 95 % intervals [low, high]")
	if r.Repeat > 1 {
		b.WriteString("; \"runs a–b\": the lowest and highest mean of one repeat")
	}
	b.WriteString(".\n\n")
	b.WriteString("| Metric |")
	for _, c := range r.Configurations {
		fmt.Fprintf(&b, " %s |", mdCell(c.Name))
	}
	b.WriteString("\n|---|")
	for range r.Configurations {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, m := range r.Metrics {
		line, any := "| "+m.Title+m.arrow()+" |", false
		for _, c := range r.Configurations {
			a, ok := c.Aggregate(m.Name)
			if ok {
				any = true
				line += " " + r.cell(m, a) + " |"
			} else {
				line += " – |"
			}
		}
		if any {
			b.WriteString(line + "\n")
		}
	}
	b.WriteString("| Runs (failed, not run) |")
	for _, c := range r.Configurations {
		fmt.Fprintf(&b, " %d (%d, %d) |", c.Runs, c.Failed, c.Pending)
	}
	b.WriteString("\n| Total cost |")
	for _, c := range r.Configurations {
		fmt.Fprintf(&b, " %s |", usdOrUnknown(c.CostUSD))
	}
	b.WriteString("\n| Judging cost |")
	for _, c := range r.Configurations {
		fmt.Fprintf(&b, " %s |", usdOrUnknown(c.JudgeCostUSD))
	}
	b.WriteString("\n\n")
	for _, c := range r.Configurations {
		if c.Description != "" {
			fmt.Fprintf(&b, "- **%s**: %s\n", mdCell(c.Name), mdCell(c.Description))
		}
	}
	b.WriteString("\n## Tokens by role\n\n| Configuration | Role | Calls | Prompt | Cached | Completion | Reasoning |\n|---|---|--:|--:|--:|--:|--:|\n")
	for _, c := range r.Configurations {
		for _, role := range c.Usage.Roles() {
			t := c.Usage[role]
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s |\n", mdCell(c.Name), role, t.Calls, thousands(t.Usage.PromptTokens),
				thousands(t.Usage.CachedTokens), thousands(t.Usage.CompletionTokens), thousands(t.Usage.ReasoningTokens))
		}
		t := c.JudgeUsage
		fmt.Fprintf(&b, "| %s | judge (%s) | %d | %s | %s | %s | %s |\n", mdCell(c.Name), mdCell(r.Judge), t.Calls, thousands(t.Usage.PromptTokens),
			thousands(t.Usage.CachedTokens), thousands(t.Usage.CompletionTokens), thousands(t.Usage.ReasoningTokens))
	}
	b.WriteString("\n## Per question\n\n")
	main := []string{MetricCorrectness, MetricClaimSupport, MetricCitationPrecision, MetricCost}
	b.WriteString("| Question |")
	for _, c := range r.Configurations {
		fmt.Fprintf(&b, " %s |", mdCell(c.Name))
	}
	b.WriteString("\n|---|")
	for range r.Configurations {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, q := range r.Questions {
		fmt.Fprintf(&b, "| %s: %s |", mdCell(q.ID), mdCell(clipText(q.Question, 80)))
		for _, c := range r.Configurations {
			var parts []string
			for _, name := range main {
				m, _ := r.Metric(name)
				if a, ok := c.Aggregate(name); ok {
					for _, qv := range a.Questions {
						if qv.ID == q.ID {
							parts = append(parts, shortTitle(name)+" "+m.Format(qv.Value))
						}
					}
				}
			}
			if failed := r.failures(c.Name, q.ID); failed > 0 {
				parts = append(parts, fmt.Sprintf("%d failed", failed))
			}
			fmt.Fprintf(&b, " %s |", strings.Join(parts, " · "))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## How the numbers are computed\n\n")
	for _, m := range r.Metrics {
		fmt.Fprintf(&b, "- **%s** (`%s`): %s\n", m.Title, m.Name, m.How)
	}
	fmt.Fprintf(&b, "\nIntervals: questions resampled with replacement %d times; the 2.5th and 97.5th percentiles of the resampled means. A question's value is the mean of its repeats.\n\n", r.Bootstrap)
	fmt.Fprintf(&b, "Claim rubric (judge %s): %s\n\nCorrectness rubric: %s\n", mdCell(r.Judge), r.ClaimRubric, r.CorrectnessRubric)
	return b.String()
}

// failures counts a configuration's failed runs of a question.
func (r *Results) failures(cfg, qid string) int {
	n := 0
	for _, c := range r.Cases {
		if c.Config == cfg && c.QuestionID == qid && c.Error != "" {
			n++
		}
	}
	return n
}

func shortTitle(name string) string {
	switch name {
	case MetricCorrectness:
		return "correct"
	case MetricClaimSupport:
		return "support"
	case MetricCitationPrecision:
		return "precision"
	case MetricCost:
		return "cost"
	}
	return name
}

func usdOrUnknown(v *float64) string {
	if v == nil {
		return "unknown"
	}
	return llm.USD(*v)
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
}

func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	return string(rs[:n-1]) + "…"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// errNoCommon is Compare's error when the two results share no
// configuration.
var errNoCommon = errors.New("eval: the two results have no configuration in common")
