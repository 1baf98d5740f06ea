package eval_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/deepgraph/deepgraph/eval"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/citation"
)

// fixedRunner stands in for a research run: in real use a Runner runs a
// research.Researcher whose searcher and page reader are wrapped by an
// eval.Recorder, and returns the report with the recorder's Texts.
func fixedRunner(cost float64) eval.Runner {
	return eval.RunnerFunc(func(ctx context.Context, t eval.Task) (*eval.Outcome, error) {
		const page = "https://raft.github.io/raft.pdf"
		rep := &research.Report{Question: t.Question.Question,
			Answer:  "A Raft follower becomes a candidate after a randomized election timeout [1](" + page + "). Raft is popular.",
			Sources: []citation.Source{{URL: page, Title: "In Search of an Understandable Consensus Algorithm"}}}
		texts := map[string]string{page: "A follower that hears from no leader becomes a candidate after a randomized election timeout."}
		return &eval.Outcome{Report: rep, CostUSD: &cost, Texts: texts}, nil
	})
}

// Run evaluates configurations on a question set; the judge here is a
// scripted model (llm/fake).
func Example() {
	judge := fake.New(
		fake.JSON(eval.ClaimVerdict{Label: "supported", Reason: "the passage says so"}).When(fake.Schema("ClaimVerdict")).Repeat(),
		fake.JSON(eval.CorrectnessVerdict{Verdict: "correct", Reason: "same facts"}).When(fake.Schema("CorrectnessVerdict")).Repeat(),
	)
	qs := []eval.Question{{ID: "raft", Question: "How does Raft elect a leader?", Answer: "after a randomized election timeout"}}
	cfgs := []eval.Configuration{{Name: "cheap", Runner: fixedRunner(0.002)}}
	res, err := eval.Run(context.Background(), qs, cfgs, eval.Options{Judge: &eval.Judge{Model: judge, Name: "fake:judge"}})
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range []string{eval.MetricCorrectness, eval.MetricClaimSupport, eval.MetricUncited, eval.MetricCost} {
		a, _ := res.Configurations[0].Aggregate(name)
		m, _ := res.Metric(name)
		fmt.Printf("%s: %s\n", m.Title, m.Format(a.Mean))
	}
	fmt.Println("judge:", res.Judge)
	// Output:
	// Correctness: 1.00
	// Claim support: 1.00
	// Uncited sentences: 0.50
	// Cost (USD): $0.0020
	// judge: fake:judge
}

// answerLength is a custom score: the answer's length in words.
type answerLength struct{}

func (answerLength) Metrics() []eval.MetricInfo {
	return []eval.MetricInfo{{Name: "answer_words", Title: "Answer words", Unit: "count", How: "Words of the answer."}}
}

func (answerLength) Score(_ context.Context, _ eval.Question, c *eval.Case) ([]eval.Measure, error) {
	return []eval.Measure{{Name: "answer_words", Value: float64(len(strings.Fields(c.Outcome.Report.Answer)))}}, nil
}

// A Scorer adds a metric of its own to every case.
func ExampleScorer() {
	judge := fake.New(fake.JSON(eval.ClaimVerdict{Label: "supported"}).When(fake.Schema("ClaimVerdict")).Repeat())
	qs := []eval.Question{{ID: "raft", Question: "How does Raft elect a leader?"}}
	res, err := eval.Run(context.Background(), qs, []eval.Configuration{{Name: "a", Runner: fixedRunner(0)}},
		eval.Options{Judge: &eval.Judge{Model: judge, Name: "fake:judge"}, Scorers: []eval.Scorer{answerLength{}}})
	if err != nil {
		log.Fatal(err)
	}
	a, _ := res.Configurations[0].Aggregate("answer_words")
	fmt.Println("answer words:", a.Mean)
	// Output: answer words: 15
}

// Score scores one report on its own.
func ExampleScore() {
	judge := fake.New(fake.JSON(eval.ClaimVerdict{Label: "contradicted", Reason: "the page says 150 ms"}).When(fake.Schema("ClaimVerdict")))
	page := "https://example.com/raft"
	c := &eval.Case{Config: "mine", QuestionID: "q1", Question: "What is Raft's election timeout?", Outcome: &eval.Outcome{
		Report: &research.Report{Answer: "The election timeout is 300 ms [1](" + page + ").", Sources: []citation.Source{{URL: page}}},
		Texts:  map[string]string{page: "Election timeouts are chosen randomly from 150–300 ms; the paper uses 150 ms."}}}
	q := eval.Question{ID: "q1", Question: c.Question}
	if err := eval.Score(context.Background(), q, c, eval.Options{Judge: &eval.Judge{Model: judge, Name: "fake:judge"}}); err != nil {
		log.Fatal(err)
	}
	st := c.Claims.Statements[0]
	fmt.Println(st.Label, "—", st.Judgments[0].Reasons[0])
	// Output: contradicted — the page says 150 ms
}
