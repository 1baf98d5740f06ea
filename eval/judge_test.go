package eval_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/eval"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/citation"
)

// craftedCase is an answer with a supported, an unsupported and a
// contradicted statement citing a page that was read, one citing a page
// that was not read, one citing nothing, and a link to a page that was
// never gathered.
func craftedCase() (*eval.Case, eval.Question) {
	const mercury, venus = "https://a.example/mercury", "https://b.example/venus"
	answer := "Mercury has no moons [1](" + mercury + "). Mercury is made of green cheese [1](" + mercury + ").\n\n" +
		"- A year on Mercury lasts 90 Earth days [1](" + mercury + ").\n" +
		"- Venus is the hottest planet of all [2](" + venus + ").\n\n" +
		"This sentence cites nothing at all. Pluto was demoted in 2006 [3](https://evil.example/pluto)."
	c := &eval.Case{Config: "crafted", QuestionID: "q", Question: "Tell me about Mercury.", Outcome: &eval.Outcome{
		Report: &research.Report{Answer: answer, Sources: []citation.Source{{URL: mercury, Title: "Mercury"}, {URL: venus, Title: "Venus"}}},
		Texts:  map[string]string{mercury: "Mercury has no moons. A year on Mercury lasts 88 Earth days."},
	}}
	return c, eval.Question{ID: "q", Question: c.Question}
}

func claimJudge() *fake.Model {
	claim := func(statement string) fake.Matcher {
		return fake.All(fake.Schema("ClaimVerdict"), fake.Contains("<statement>\n"+statement))
	}
	return fake.New(
		fake.JSON(eval.ClaimVerdict{Label: "supported", Reason: "stated"}).When(claim("Mercury has no moons.")),
		fake.JSON(eval.ClaimVerdict{Label: "unsupported", Reason: "not in the passage"}).When(claim("Mercury is made of green cheese.")),
		fake.JSON(eval.ClaimVerdict{Label: "contradicted", Reason: "88, not 90"}).When(claim("A year on Mercury lasts 90 Earth days.")),
	)
}

func TestJudgeCraftedStatements(t *testing.T) {
	c, q := craftedCase()
	judge := claimJudge()
	require.NoError(t, eval.Score(context.Background(), q, c, eval.Options{Judge: &eval.Judge{Model: judge, Name: "fake:judge"}}))
	assert.Zero(t, judge.Remaining(), "each judged statement asked once")
	calls := judge.Calls()
	require.Len(t, calls, 3, "the unread page and the uncited sentence are never sent to the judge")
	for _, call := range calls {
		p := call.LastMessage().Content
		assert.NotContains(t, p, "Venus")
		assert.Contains(t, p, "<passage>\nMercury has no moons. A year on Mercury lasts 88 Earth days.\n</passage>", "judged against the text the run read")
		assert.Contains(t, p, eval.ClaimRubric)
	}

	labels := map[string]string{}
	for _, st := range c.Claims.Statements {
		labels[st.Text] = st.Label
	}
	assert.Equal(t, map[string]string{
		"Mercury has no moons.":                  eval.Supported,
		"Mercury is made of green cheese.":       eval.Unsupported,
		"A year on Mercury lasts 90 Earth days.": eval.Contradicted,
		"Venus is the hottest planet of all.":    eval.Unreadable,
		"This sentence cites nothing at all.":    "",
		"Pluto was demoted in 2006.":             eval.Unreadable,
	}, labels)
	cl := c.Claims
	assert.Equal(t, 5, cl.Cited)
	assert.Equal(t, 1, cl.Uncited)
	assert.Equal(t, [4]int{1, 1, 1, 2}, [4]int{cl.Supported, cl.Unsupported, cl.Contradicted, cl.Unreadable})
	assert.Equal(t, []string{"https://evil.example/pluto"}, c.Integrity.NotGathered)
	assert.Equal(t, []string{"https://b.example/venus"}, c.Integrity.Unreadable)
	want := map[string]float64{eval.MetricClaimSupport: 1.0 / 3, eval.MetricContradicted: 1.0 / 3, eval.MetricCitationPrecision: 1.0 / 3,
		eval.MetricUncited: 1.0 / 6, eval.MetricNotGathered: 1, eval.MetricUnreadable: 1, eval.MetricJudgeAgreement: 1, eval.MetricFailed: 0}
	for name, v := range want {
		got, ok := c.Value(name)
		require.True(t, ok, name)
		assert.InDelta(t, v, got, 1e-9, name)
	}
	_, ok := c.Value(eval.MetricCorrectness)
	assert.False(t, ok, "no reference, no correctness")
}

func TestJudgeReadsAPageTheRunDidNotRecord(t *testing.T) {
	c, q := craftedCase()
	reader := pageReader{"https://b.example/venus": "Venus is the hottest planet of all, at 465 degrees."}
	judge := claimJudge()
	judge.Add(fake.JSON(eval.ClaimVerdict{Label: "supported"}).When(fake.Contains("<statement>\nVenus is the hottest")))
	require.NoError(t, eval.Score(context.Background(), q, c, eval.Options{Judge: &eval.Judge{Model: judge, Name: "j"}, Reader: reader}))
	assert.Empty(t, c.Integrity.Unreadable)
	assert.Equal(t, 2, c.Claims.Supported)
}

func TestJudgePassesMajorityAndAgreement(t *testing.T) {
	page := "https://a.example/p"
	c := &eval.Case{Question: "q", Outcome: &eval.Outcome{
		Report: &research.Report{Answer: "The sky is blue today [1](" + page + ").", Sources: []citation.Source{{URL: page}}},
		Texts:  map[string]string{page: "The sky is blue."}}}
	judge := fake.New(
		fake.JSON(eval.ClaimVerdict{Label: "supported"}),
		fake.JSON(eval.ClaimVerdict{Label: "unsupported"}),
		fake.JSON(eval.ClaimVerdict{Label: "supported"}),
		fake.JSON(eval.CorrectnessVerdict{Verdict: "correct"}),
		fake.JSON(eval.CorrectnessVerdict{Verdict: "incorrect"}),
		fake.JSON(eval.CorrectnessVerdict{Verdict: "nonsense"}),
	)
	q := eval.Question{Question: "What colour is the sky?", Answer: "blue"}
	require.NoError(t, eval.Score(context.Background(), q, c, eval.Options{Judge: &eval.Judge{Model: judge, Name: "j", Passes: 3}}))
	jd := c.Claims.Statements[0].Judgments[0]
	assert.Equal(t, eval.Supported, jd.Label)
	assert.InDelta(t, 2.0/3, jd.Agreement, 1e-9)
	assert.Len(t, jd.Reasons, 3)
	assert.Equal(t, eval.Incorrect, c.Correctness.Verdict, "an unknown verdict counts as incorrect: 2 of 3")
	assert.InDelta(t, 2.0/3, c.Correctness.Agreement, 1e-9)
	got, _ := c.Value(eval.MetricJudgeAgreement)
	assert.InDelta(t, 2.0/3, got, 1e-9)
	assert.Equal(t, 3, c.JudgePasses)
}

func TestScoreAFailedRun(t *testing.T) {
	c := &eval.Case{Error: "model down"}
	require.NoError(t, eval.Score(context.Background(), eval.Question{}, c, eval.Options{Judge: &eval.Judge{Model: fake.New(), Name: "j"}}))
	v, ok := c.Value(eval.MetricFailed)
	assert.True(t, ok)
	assert.Equal(t, 1.0, v)
	assert.ErrorIs(t, eval.Score(context.Background(), eval.Question{}, c, eval.Options{}), eval.ErrNoJudge)
}

func TestPassagePicksTheWindowAboutTheStatement(t *testing.T) {
	var text strings.Builder
	for range 40 {
		text.WriteString("Filler paragraph about unrelated gardening topics and tomatoes.\n\n")
	}
	text.WriteString("The Danube empties into the Black Sea after flowing through ten countries.\n\n")
	for range 40 {
		text.WriteString("More filler about cooking pasta al dente.\n\n")
	}
	p := eval.Passage(text.String(), "The Danube flows into the Black Sea.", 600)
	assert.Contains(t, p, "The Danube empties into the Black Sea")
	assert.LessOrEqual(t, len(p), 600)
	assert.Equal(t, "short text", eval.Passage("short text", "anything", 600))
}
