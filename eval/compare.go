package eval

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Comparison is what changed between two evals (research eval compare OLD
// NEW).
type Comparison struct {
	Old, New string // the results' sets and dates, for the title
	// OldJudge and NewJudge name the judges: a change of judge changes the
	// scores too.
	OldJudge, NewJudge string
	Rows               []ComparisonRow
}

// ComparisonRow is one metric of one configuration, old and new.
//
// Delta is New − Old over the questions both evals answered, with the
// paired bootstrap 95 % interval [DeltaLow, DeltaHigh] (the same questions
// resampled for both). Change is "better" or "worse" when the interval
// excludes 0 (by the metric's direction), "changed" for a metric with no
// direction, else "no clear change".
type ComparisonRow struct {
	Config, OldConfig   string
	Metric              MetricInfo
	Old, New            Aggregate
	N                   int
	Delta               float64
	DeltaLow, DeltaHigh float64
	Change              string
}

// Compare compares two evals configuration by configuration — those of the
// same name, or, when each eval has a single configuration, those two.
func Compare(old, new *Results) (*Comparison, error) {
	cmp := &Comparison{Old: describe(old), New: describe(new), OldJudge: old.Judge, NewJudge: new.Judge}
	type pair struct{ o, n ConfigSummary }
	var pairs []pair
	for _, n := range new.Configurations {
		for _, o := range old.Configurations {
			if o.Name == n.Name {
				pairs = append(pairs, pair{o, n})
			}
		}
	}
	if len(pairs) == 0 && len(old.Configurations) == 1 && len(new.Configurations) == 1 {
		pairs = append(pairs, pair{old.Configurations[0], new.Configurations[0]})
	}
	if len(pairs) == 0 {
		return nil, errNoCommon
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range pairs {
		for _, m := range new.Metrics {
			oa, ok1 := p.o.Aggregate(m.Name)
			na, ok2 := p.n.Aggregate(m.Name)
			if !ok1 || !ok2 {
				continue
			}
			row := ComparisonRow{Config: p.n.Name, OldConfig: p.o.Name, Metric: m, Old: oa, New: na}
			var diffs []float64
			for _, nq := range na.Questions {
				if i := slices.IndexFunc(oa.Questions, func(q QuestionValue) bool { return q.ID == nq.ID }); i >= 0 {
					diffs = append(diffs, nq.Value-oa.Questions[i].Value)
				}
			}
			row.N = len(diffs)
			if len(diffs) == 0 {
				continue
			}
			row.Delta = mean(diffs)
			row.DeltaLow, row.DeltaHigh = bootstrapCI(diffs, rng)
			row.Change = "no clear change"
			if row.DeltaLow > 0 || row.DeltaHigh < 0 {
				up := row.DeltaLow > 0
				switch {
				case m.Better == "higher" && up, m.Better == "lower" && !up:
					row.Change = "better"
				case m.Better == "":
					row.Change = "changed"
				default:
					row.Change = "worse"
				}
			}
			cmp.Rows = append(cmp.Rows, row)
		}
	}
	return cmp, nil
}

func describe(r *Results) string {
	return fmt.Sprintf("%s (%s)", r.Set, r.Created.Format("2006-01-02 15:04"))
}

// Markdown is the comparison as a table per configuration.
func (c *Comparison) Markdown() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Eval comparison\n\nOld: %s · judge %s\nNew: %s · judge %s\n", mdCell(c.Old), mdCell(c.OldJudge), mdCell(c.New), mdCell(c.NewJudge))
	if c.OldJudge != c.NewJudge {
		b.WriteString("\n**The judges differ**: part of a change may be the judge's.\n")
	}
	b.WriteString("\nDelta is new − old over the questions both answered, with its paired bootstrap 95 % interval; a change counts when the interval excludes 0.\n")
	cfg := ""
	for _, r := range c.Rows {
		if r.Config != cfg {
			cfg = r.Config
			title := r.Config
			if r.OldConfig != r.Config {
				title = r.OldConfig + " → " + r.Config
			}
			fmt.Fprintf(&b, "\n## %s\n\n| Metric | Old | New | Delta [95 %%] | Questions | Change |\n|---|---|---|---|--:|---|\n", mdCell(title))
		}
		m := r.Metric
		fmt.Fprintf(&b, "| %s%s | %s [%s, %s] | %s [%s, %s] | %s [%s, %s] | %d | %s |\n", m.Title, m.arrow(),
			m.Format(r.Old.Mean), m.Format(r.Old.Low), m.Format(r.Old.High),
			m.Format(r.New.Mean), m.Format(r.New.Low), m.Format(r.New.High),
			signed(m, r.Delta), signed(m, r.DeltaLow), signed(m, r.DeltaHigh), r.N, r.Change)
	}
	return b.String()
}

func signed(m MetricInfo, v float64) string {
	if v > 0 {
		return "+" + m.Format(v)
	}
	if v < 0 {
		return "−" + m.Format(-v)
	}
	return m.Format(0)
}
