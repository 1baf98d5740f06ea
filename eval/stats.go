package eval

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/deepgraph/deepgraph/llm"
)

// ResultsSchema names results.json's layout; it changes when a field is
// removed or changes meaning.
const ResultsSchema = "deepgraph.eval.results/v1"

// Results are an eval's outcome: every case, and per configuration the
// mean of each metric with its interval.
type Results struct {
	Schema  string    `json:"schema"`
	Created time.Time `json:"created"`
	// Set names the question set (its file).
	Set string `json:"set,omitempty"`
	// Judge is the judge model, JudgePasses its passes per item.
	Judge       string `json:"judge"`
	JudgePasses int    `json:"judge_passes"`
	Repeat      int    `json:"repeat"`
	// The rubrics the judge was given.
	ClaimRubric       string `json:"claim_rubric"`
	CorrectnessRubric string `json:"correctness_rubric"`
	// Bootstrap is the number of resamples of the intervals.
	Bootstrap      int             `json:"bootstrap"`
	Metrics        []MetricInfo    `json:"metrics"`
	Questions      []Question      `json:"questions"`
	Configurations []ConfigSummary `json:"configurations"`
	Cases          []*Case         `json:"cases"`
}

// ConfigSummary sums up a configuration's cases.
type ConfigSummary struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Runs counts its cases, Failed those whose run failed, Pending the
	// cases not run (the eval was interrupted).
	Runs    int `json:"runs"`
	Failed  int `json:"failed"`
	Pending int `json:"pending"`
	// Usage is the usage of its runs per role, summed; CostUSD their cost
	// (nil when one is unknown); JudgeCostUSD judging's.
	Usage        llm.UsageByRole `json:"usage"`
	CostUSD      *float64        `json:"cost_usd"`
	JudgeUsage   llm.Tally       `json:"judge_usage"`
	JudgeCostUSD *float64        `json:"judge_cost_usd"`
	Aggregates   []Aggregate     `json:"aggregates"`
}

// Aggregate returns the configuration's aggregate of metric name.
func (s ConfigSummary) Aggregate(name string) (Aggregate, bool) {
	for _, a := range s.Aggregates {
		if a.Metric == name {
			return a, true
		}
	}
	return Aggregate{}, false
}

// Aggregate is a metric over a configuration's questions.
//
// A question's value is the mean of its repeats' values; Mean is the mean
// over the questions, and [Low, High] its bootstrap 95 % interval:
// questions resampled with replacement Bootstrap times, the 2.5th and 97.5th
// percentiles of the resampled means. RepeatMin and RepeatMax are the
// lowest and highest mean over the questions of one repeat (the spread
// from run to run); StdDev is the mean over questions of the standard
// deviation across their repeats.
type Aggregate struct {
	Metric    string          `json:"metric"`
	N         int             `json:"n"`
	Mean      float64         `json:"mean"`
	Low       float64         `json:"low"`
	High      float64         `json:"high"`
	RepeatMin float64         `json:"repeat_min"`
	RepeatMax float64         `json:"repeat_max"`
	StdDev    float64         `json:"repeat_stddev"`
	Questions []QuestionValue `json:"questions"`
}

// QuestionValue is a question's value of a metric: the mean of its
// repeats.
type QuestionValue struct {
	ID    string  `json:"id"`
	Value float64 `json:"value"`
}

// bootstrapSamples is the number of resamples of an interval.
const bootstrapSamples = 2000

// Summarize builds the Results of the cases (Run calls it; call it to sum
// up cases kept in a Store, or scored with Score).
func Summarize(qs []Question, cfgs []Configuration, cases []*Case, opts Options) *Results {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	seed := opts.Seed
	if seed == 0 {
		seed = 1
	}
	repeat := max(opts.Repeat, 1)
	res := &Results{Schema: ResultsSchema, Created: now().UTC(), Repeat: repeat, ClaimRubric: ClaimRubric,
		CorrectnessRubric: CorrectnessRubric, Bootstrap: bootstrapSamples, Questions: qs, Cases: cases}
	if opts.Judge != nil {
		res.Judge, res.JudgePasses = opts.Judge.Name, opts.Judge.passes()
	}
	res.Metrics = BuiltinMetrics()
	for _, sc := range opts.Scorers {
		res.Metrics = append(res.Metrics, sc.Metrics()...)
	}
	if res.Questions == nil {
		res.Questions = []Question{}
	}
	if res.Cases == nil {
		res.Cases = []*Case{}
	}
	order := map[string]int{}
	for i, q := range qs {
		order[q.ID] = i
	}
	slices.SortStableFunc(res.Cases, func(a, b *Case) int {
		if a.Config != b.Config {
			return cfgIndex(cfgs, a.Config) - cfgIndex(cfgs, b.Config)
		}
		if a.QuestionID != b.QuestionID {
			return order[a.QuestionID] - order[b.QuestionID]
		}
		return a.Repeat - b.Repeat
	})
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for _, cfg := range cfgs {
		s := ConfigSummary{Name: cfg.Name, Description: cfg.Description, Usage: llm.UsageByRole{}}
		var mine []*Case
		costKnown, judgeKnown := true, true
		var cost, judgeCost float64
		for _, c := range res.Cases {
			if c.Config != cfg.Name {
				continue
			}
			mine = append(mine, c)
			s.Runs++
			if c.Error != "" || c.Outcome == nil || c.Outcome.Report == nil {
				s.Failed++
			}
			if c.Outcome != nil && c.Outcome.Report != nil {
				s.Usage = s.Usage.Merge(c.Outcome.Report.Usage)
				if c.Outcome.CostUSD == nil {
					costKnown = false
				} else {
					cost += *c.Outcome.CostUSD
				}
			}
			s.JudgeUsage = s.JudgeUsage.Add(c.JudgeUsage)
			if c.JudgeCostUSD == nil {
				judgeKnown = false
			} else {
				judgeCost += *c.JudgeCostUSD
			}
		}
		s.Pending = len(qs)*repeat - s.Runs
		if costKnown && s.Runs > 0 {
			s.CostUSD = &cost
		}
		if judgeKnown && s.Runs > 0 {
			s.JudgeCostUSD = &judgeCost
		}
		for _, m := range res.Metrics {
			if a, ok := aggregate(m.Name, qs, mine, repeat, rng); ok {
				s.Aggregates = append(s.Aggregates, a)
			}
		}
		if s.Aggregates == nil {
			s.Aggregates = []Aggregate{}
		}
		res.Configurations = append(res.Configurations, s)
	}
	if res.Configurations == nil {
		res.Configurations = []ConfigSummary{}
	}
	return res
}

func cfgIndex(cfgs []Configuration, name string) int {
	for i, c := range cfgs {
		if c.Name == name {
			return i
		}
	}
	return len(cfgs)
}

// aggregate sums up metric over the cases of one configuration.
func aggregate(metric string, qs []Question, cases []*Case, repeat int, rng *rand.Rand) (Aggregate, bool) {
	byQ := map[string][]float64{}
	byRepeat := map[int][]float64{}
	for _, c := range cases {
		if v, ok := c.Value(metric); ok {
			byQ[c.QuestionID] = append(byQ[c.QuestionID], v)
			byRepeat[c.Repeat] = append(byRepeat[c.Repeat], v)
		}
	}
	a := Aggregate{Metric: metric}
	var values, sds []float64
	for _, q := range qs {
		vs, ok := byQ[q.ID]
		if !ok {
			continue
		}
		m := mean(vs)
		a.Questions = append(a.Questions, QuestionValue{ID: q.ID, Value: m})
		values = append(values, m)
		sds = append(sds, stddev(vs))
	}
	if len(values) == 0 {
		return a, false
	}
	a.N = len(values)
	a.Mean = mean(values)
	a.Low, a.High = bootstrapCI(values, rng)
	a.StdDev = mean(sds)
	first := true
	for r := 1; r <= repeat; r++ {
		vs, ok := byRepeat[r]
		if !ok {
			continue
		}
		m := mean(vs)
		if first || m < a.RepeatMin {
			a.RepeatMin = m
		}
		if first || m > a.RepeatMax {
			a.RepeatMax = m
		}
		first = false
	}
	return a, true
}

// bootstrapCI is the percentile bootstrap 95 % interval of the mean of
// values.
func bootstrapCI(values []float64, rng *rand.Rand) (low, high float64) {
	if len(values) == 1 {
		return values[0], values[0]
	}
	means := make([]float64, bootstrapSamples)
	for b := range means {
		var sum float64
		for range values {
			sum += values[rng.IntN(len(values))]
		}
		means[b] = sum / float64(len(values))
	}
	slices.Sort(means)
	return percentile(means, 0.025), percentile(means, 0.975)
}

// percentile of sorted values, by linear interpolation.
func percentile(sorted []float64, p float64) float64 {
	pos := p * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(i)
	return sorted[i]*(1-frac) + sorted[i+1]*frac
}

func mean(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	var sum float64
	for _, v := range vs {
		sum += v
	}
	return sum / float64(len(vs))
}

// stddev is the sample standard deviation (0 for fewer than two values).
func stddev(vs []float64) float64 {
	if len(vs) < 2 {
		return 0
	}
	m := mean(vs)
	var ss float64
	for _, v := range vs {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss / float64(len(vs)-1))
}
