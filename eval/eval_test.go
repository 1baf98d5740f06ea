package eval_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/eval"
	"github.com/deepgraph/deepgraph/llm"
)

// evalSetup is two configurations over the test corpus — a careful model
// and a careless one, the careless one pricier — and the judge.
func evalSetup(t *testing.T) ([]eval.Question, []eval.Configuration, *corpusRunner, *corpusRunner, *eval.Judge) {
	t.Helper()
	ix, _ := corpus(t)
	careful := &corpusRunner{ix: ix, model: &promptModel{}, price: llm.Price{Input: 1, Output: 2, CachedInput: 0.5}}
	careless := &corpusRunner{ix: ix, model: &promptModel{careless: true, prompt: 400}, price: llm.Price{Input: 3, Output: 6, CachedInput: 1}}
	cfgs := []eval.Configuration{
		{Name: "careful", Description: "fake careful model", Runner: careful},
		{Name: "careless", Description: "fake careless model", Runner: careless},
	}
	return questions(t), cfgs, careful, careless, &eval.Judge{Model: &promptModel{judge: true}, Name: "fake:judge"}
}

func TestRunEndToEndOverACorpus(t *testing.T) {
	t.Parallel()
	qs, cfgs, careful, careless, judge := evalSetup(t)
	require.GreaterOrEqual(t, len(qs), 10)
	out := t.TempDir()
	var progressed int
	res, err := eval.Run(context.Background(), qs, cfgs, eval.Options{Judge: judge, Repeat: 2, Store: eval.DirStore(out), Concurrency: 4,
		JudgePrice: &llm.Price{Input: 1, Output: 1}, Progress: func(*eval.Case, bool) { progressed++ }})
	require.NoError(t, err)
	res.Set = "questions.jsonl"
	assert.Equal(t, 2*2*len(qs), progressed)
	assert.EqualValues(t, 2*len(qs), careful.runs.Load())
	assert.EqualValues(t, 2*len(qs), careless.runs.Load())
	require.Len(t, res.Configurations, 2)

	good, bad := res.Configurations[0], res.Configurations[1]
	assert.Equal(t, "careful", good.Name)
	for _, c := range res.Configurations {
		assert.Equal(t, 2*len(qs), c.Runs, c.Name)
		assert.Zero(t, c.Failed, c.Name)
		a, ok := c.Aggregate(eval.MetricNotGathered)
		require.True(t, ok)
		assert.Zero(t, a.Mean, "%s: every cited URL was gathered", c.Name)
		a, ok = c.Aggregate(eval.MetricUnreadable)
		require.True(t, ok)
		assert.Zero(t, a.Mean, "%s: every cited page's text was recorded", c.Name)
	}
	value := func(s eval.ConfigSummary, m string) eval.Aggregate {
		a, ok := s.Aggregate(m)
		require.True(t, ok, "%s has %s", s.Name, m)
		assert.Equal(t, len(qs), a.N, "%s %s", s.Name, m)
		assert.LessOrEqual(t, a.Low, a.Mean)
		assert.GreaterOrEqual(t, a.High, a.Mean)
		return a
	}
	// The careful model cites each sentence of the right page.
	assert.Equal(t, 1.0, value(good, eval.MetricClaimSupport).Mean)
	assert.Equal(t, 1.0, value(good, eval.MetricCitationPrecision).Mean)
	assert.Equal(t, 0.0, value(good, eval.MetricUncited).Mean)
	assert.Equal(t, 1.0, value(good, eval.MetricSourceRecall).Mean)
	assert.Equal(t, 1.0, value(good, eval.MetricCitedRecall).Mean)
	assert.Greater(t, value(good, eval.MetricCorrectness).Mean, 0.8)
	// The careless one: a wrong number (contradicted), an invented fact
	// (unsupported), an uncited sentence.
	assert.Less(t, value(bad, eval.MetricClaimSupport).Mean, 0.7)
	assert.Greater(t, value(bad, eval.MetricContradicted).Mean, 0.0)
	assert.Greater(t, value(bad, eval.MetricUncited).Mean, 0.0)
	assert.Less(t, value(bad, eval.MetricCitationPrecision).High, value(good, eval.MetricCitationPrecision).Low)
	assert.Greater(t, value(bad, eval.MetricCost).Mean, value(good, eval.MetricCost).Mean)
	// Usage: tokens by role, cached included; the judge's own.
	assert.Positive(t, value(good, eval.MetricCachedTokens).Mean)
	assert.Positive(t, value(good, eval.MetricCalls).Mean)
	assert.Contains(t, good.Usage.Roles(), llm.RoleAnswer)
	assert.Positive(t, good.JudgeUsage.Calls)
	require.NotNil(t, good.JudgeCostUSD)
	assert.Positive(t, *good.JudgeCostUSD)
	// Deterministic runs: both repeats agree.
	a := value(good, eval.MetricClaimSupport)
	assert.Equal(t, a.RepeatMin, a.RepeatMax)

	// The outputs.
	require.NoError(t, eval.WriteFiles(out, res))
	md, err := os.ReadFile(filepath.Join(out, eval.SummaryFile))
	require.NoError(t, err)
	if dir := os.Getenv("EVAL_KEEP"); dir != "" {
		require.NoError(t, eval.WriteFiles(dir, res))
	}
	for _, want := range []string{"judge **fake:judge**", "| Claim support ↑ |", "careful", "careless", "## Tokens by role", "How the numbers are computed", eval.CorrectnessRubric} {
		assert.Contains(t, string(md), want)
	}
	back, err := eval.ReadResults(out)
	require.NoError(t, err)
	assert.Equal(t, res.Judge, back.Judge)
	assert.Len(t, back.Cases, 2*2*len(qs))
	page, err := os.ReadFile(filepath.Join(out, eval.PageFile))
	require.NoError(t, err)
	for _, want := range []string{`<svg id="scatter"`, "contradicted", "<blockquote>", "fake:judge"} {
		assert.Contains(t, string(page), want)
	}
	assert.NotContains(t, string(page), "<script", "self-contained, no script")
	assert.NotContains(t, string(page), "http://cdn")

	// Run again: everything is kept, nothing runs or is judged again.
	judgeCalls := judge.Model.(*promptModel).calls.Load()
	again, err := eval.Run(context.Background(), qs, cfgs, eval.Options{Judge: judge, Repeat: 2, Store: eval.DirStore(out)})
	require.NoError(t, err)
	assert.EqualValues(t, 2*len(qs), careful.runs.Load(), "no run again")
	assert.Equal(t, judgeCalls, judge.Model.(*promptModel).calls.Load(), "no judging again")
	ga, _ := again.Configurations[0].Aggregate(eval.MetricClaimSupport)
	assert.Equal(t, a.Mean, ga.Mean)
}

func TestCompareSaysWhatChanged(t *testing.T) {
	t.Parallel()
	qs, cfgs, _, _, judge := evalSetup(t)
	old, err := eval.Run(context.Background(), qs, cfgs[1:], eval.Options{Judge: judge})
	require.NoError(t, err)
	cur, err := eval.Run(context.Background(), qs, cfgs[:1], eval.Options{Judge: judge})
	require.NoError(t, err)
	cmp, err := eval.Compare(old, cur)
	require.NoError(t, err)
	change := map[string]string{}
	for _, r := range cmp.Rows {
		assert.Equal(t, "careless", r.OldConfig)
		assert.Equal(t, len(qs), r.N)
		change[r.Metric.Name] = r.Change
	}
	assert.Equal(t, "better", change[eval.MetricClaimSupport])
	assert.Equal(t, "better", change[eval.MetricCost], "the careful model is cheaper")
	assert.Equal(t, "no clear change", change[eval.MetricNotGathered])
	md := cmp.Markdown()
	assert.Contains(t, md, "careless → careful")
	assert.Contains(t, md, "| better |")

	same, err := eval.Compare(cur, cur)
	require.NoError(t, err)
	for _, r := range same.Rows {
		assert.Equal(t, "no clear change", r.Change, r.Metric.Name)
		assert.Zero(t, r.Delta)
	}
	_, err = eval.Compare(&eval.Results{Configurations: []eval.ConfigSummary{{Name: "a"}, {Name: "b"}}}, cur)
	require.Error(t, err)
}

func TestRunStopsWhenCancelledAndResumes(t *testing.T) {
	t.Parallel()
	qs, cfgs, careful, careless, judge := evalSetup(t)
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Stop once the fifth run starts: four finish or none, the rest never start.
	careful.started = func(eval.Question) {
		if careful.runs.Load()+careless.runs.Load() == 5 {
			cancel()
		}
	}
	res, err := eval.Run(ctx, qs, cfgs, eval.Options{Judge: judge, Store: eval.DirStore(out), Concurrency: 1})
	require.ErrorIs(t, err, context.Canceled)
	done := len(res.Cases)
	assert.Less(t, done, 2*len(qs))
	careful.started = nil
	before := careful.runs.Load() + careless.runs.Load()
	res, err = eval.Run(context.Background(), qs, cfgs, eval.Options{Judge: judge, Store: eval.DirStore(out), Concurrency: 2})
	require.NoError(t, err)
	assert.Len(t, res.Cases, 2*len(qs))
	assert.EqualValues(t, int64(2*len(qs)-done), careful.runs.Load()+careless.runs.Load()-before, "only the unfinished runs ran again")
	for _, c := range res.Configurations {
		assert.Zero(t, c.Pending)
	}
	_ = time.Second
	_ = strings.Contains
}
