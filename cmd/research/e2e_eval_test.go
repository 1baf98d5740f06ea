package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/eval"
	"github.com/deepgraph/deepgraph/internal/fakeproviders"
)

// evalScript answers the eval's research and judge prompts from the
// prompts alone (fakeproviders' eval script): model "careless" is the
// careless one, "judge" the judge. While hang is set, the research of a
// question containing it hangs.
func evalScript(t *testing.T, hang *atomic.Value) func(c oaCallCtx) oaReply {
	return func(c oaCallCtx) oaReply {
		p, schema := c.req.prompt(), c.req.schema()
		if h, _ := hang.Load().(string); h != "" && strings.Contains(p, h) {
			return oaReply{Hang: true}
		}
		if c.req.Model == "judge" {
			if reply, ok := fakeproviders.JudgeReply(schema, p); ok {
				return oaReply{Content: reply}
			}
		} else if reply, ok := fakeproviders.ResearchReply(schema, p, c.req.Model == "careless"); ok {
			return oaReply{Content: reply}
		}
		t.Errorf("evalScript: no reply for model %s, schema %q: %.300s", c.req.Model, schema, p)
		return oaReply{Status: 500, ErrBody: `{"error": {"message": "no script"}}`}
	}
}

func TestEvalEndToEnd(t *testing.T) {
	t.Parallel()
	hang := &atomic.Value{}
	oa := newFakeOpenAI(t, evalScript(t, hang))
	corpus, err := filepath.Abs("../../eval/testdata/corpus")
	require.NoError(t, err)
	// Four of the test set's questions: the command's paths, not the
	// eval's statistics (package eval runs the whole set in process).
	all, err := os.ReadFile("../../eval/testdata/questions.jsonl")
	require.NoError(t, err)
	var some []string
	for _, line := range strings.Split(string(all), "\n") {
		for _, id := range []string{"planets-1", "planets-2", "planets-3", "computing-1"} {
			if strings.Contains(line, `"id": "`+id+`"`) {
				some = append(some, line)
			}
		}
	}
	require.Len(t, some, 4)
	questions := filepath.Join(t.TempDir(), "questions.jsonl")
	require.NoError(t, os.WriteFile(questions, []byte(strings.Join(some, "\n")+"\n"), 0o644))
	out := filepath.Join(t.TempDir(), "eval")
	vars := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
	args := []string{"eval", questions, "--corpus", corpus, "--model", "openai:careful", "--model", "openai:careless",
		"--judge", "openai:judge", "--queries", "1", "--loops", "1", "--out", out}

	// Killed while the research of one question hangs: the others finish.
	hang.Store("Topic: Which planet has the tallest volcano")
	s := startBin(t, vars, args...)
	s.waitCount(t, "openai:careless ", 3, 50*time.Second)
	s.waitCount(t, "openai:careful ", 3, 50*time.Second)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGKILL))
	s.wait(t, 10*time.Second)
	kept, err := filepath.Glob(filepath.Join(out, "cases", "*", "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(kept), 6, "the finished runs are kept")
	runIDs, err := filepath.Glob(filepath.Join(out, "runs", "*", "planets-2-r1.id"))
	require.NoError(t, err)
	require.Len(t, runIDs, 2, "the interrupted runs are noted, to be resumed")

	// Run again: only the interrupted runs run, resumed from their checkpoints.
	hang.Store("")
	before := oa.count()
	res := run(t, vars, args...)
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stderr, "(kept)")
	for _, r := range oa.all()[before:] {
		body := string(r.Body)
		if !strings.Contains(body, "ClaimVerdict") && !strings.Contains(body, "CorrectnessVerdict") {
			assert.Contains(t, body, "volcano", "only the interrupted question is researched again")
		}
	}
	ids, _ := filepath.Glob(filepath.Join(out, "runs", "*", "*.id"))
	assert.Empty(t, ids, "no run left interrupted")

	results, err := eval.ReadResults(out)
	require.NoError(t, err)
	assert.Equal(t, "openai:judge", results.Judge)
	require.Len(t, results.Configurations, 2)
	support := map[string]float64{}
	for _, c := range results.Configurations {
		assert.Equal(t, 4, c.Runs, c.Name)
		assert.Zero(t, c.Failed, c.Name)
		a, ok := c.Aggregate(eval.MetricClaimSupport)
		require.True(t, ok)
		support[c.Name] = a.Mean
		ng, _ := c.Aggregate(eval.MetricNotGathered)
		assert.Zero(t, ng.Mean)
	}
	assert.Equal(t, 1.0, support["openai:careful"])
	assert.Less(t, support["openai:careless"], 0.7)
	md, err := os.ReadFile(filepath.Join(out, "summary.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "judge **openai:judge**")
	_, err = os.Stat(filepath.Join(out, "index.html"))
	require.NoError(t, err)
	assert.NotContains(t, res.all(), openaiKey)

	// The runs are in the run store.
	runs := run(t, vars, "runs")
	require.Equal(t, 0, runs.code, runs)
	assert.Contains(t, runs.stdout, "How long does a year on Mercury last?")

	// Compared with itself: nothing changed.
	cmp := run(t, vars, "eval", "compare", out, filepath.Join(out, "results.json"))
	require.Equal(t, 0, cmp.code, cmp)
	assert.Contains(t, cmp.stdout, "no clear change")
	assert.NotContains(t, cmp.stdout, "| better |")

	// Usage errors.
	bad := run(t, vars, "eval", questions)
	assert.Equal(t, exitUsage, bad.code, bad)
	assert.Contains(t, bad.stderr, "--out DIR")
	bad = run(t, vars, "eval", "compare", out)
	assert.Equal(t, exitUsage, bad.code, bad)
}
