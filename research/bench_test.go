package research_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/sqlite"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/schemas"
)

// BenchmarkRoundLatency runs one round of three queries whose research takes
// 300 ms each. In parallel the round costs about one query's time; the
// sequential variant (MaxConcurrency 1) shows what three would cost.
func BenchmarkRoundLatency(b *testing.B) {
	for _, conc := range []int{0, 1} {
		name := "parallel"
		if conc == 1 {
			name = "sequential"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				m := fake.New(queries("a", "b", "c"), reflection(true, ""), fake.Text("final").When(fake.Contains("well-researched answer")))
				backend := &scripted{delay: 300 * time.Millisecond}
				r, err := research.New(research.Config{QueryModel: m, Backend: backend, MaxConcurrency: conc, Now: fixedNow})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.Run(context.Background(), "question"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
		})
	}
}

// BenchmarkEffort reports the LLM calls and tokens of one run per effort
// level, with a model that always asks for more research (so every loop is
// used) and fixed token counts per call.
func BenchmarkEffort(b *testing.B) {
	for _, e := range research.Efforts() {
		b.Run(e.Name, func(b *testing.B) {
			var calls, tokens int
			for b.Loop() {
				m := effortModel(e, 0)
				r, err := research.New(research.Config{QueryModel: m, Backend: research.GeminiBackend{}, InitialQueries: e.Queries, MaxLoops: e.Loops, Now: fixedNow})
				if err != nil {
					b.Fatal(err)
				}
				rep, err := r.Run(context.Background(), "question")
				if err != nil {
					b.Fatal(err)
				}
				total := rep.Usage.Total()
				calls, tokens = total.Calls, total.Usage.TotalTokens
			}
			b.ReportMetric(float64(calls), "llm-calls/run")
			b.ReportMetric(float64(tokens), "tokens/run")
		})
	}
}

// BenchmarkStore measures what keeping a run costs: a medium-effort run
// (3 queries, 3 loops, every loop used) against a model that answers each
// call after 100 ms, with no store and with the SQLite store (every step
// committed, every finished search recorded as it finishes), a new thread
// per run. overhead-% is the store's share of the run's wall time.
func BenchmarkStore(b *testing.B) {
	e, _ := research.EffortByName("medium")
	stores := []struct {
		name string
		open func(b *testing.B) graph.Checkpointer
	}{
		{"none", func(*testing.B) graph.Checkpointer { return nil }},
		{"sqlite", func(b *testing.B) graph.Checkpointer {
			s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "runs.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			return s
		}},
	}
	var base float64
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			store := st.open(b)
			for i := 0; b.Loop(); i++ {
				r, err := research.New(research.Config{QueryModel: effortModel(e, 100*time.Millisecond), Backend: research.GeminiBackend{},
					InitialQueries: e.Queries, MaxLoops: e.Loops, Checkpointer: store, Now: fixedNow})
				if err != nil {
					b.Fatal(err)
				}
				var opts []research.RunOption
				if store != nil {
					opts = append(opts, research.Thread(fmt.Sprintf("bench-%d", i)))
				}
				if _, err := r.Run(context.Background(), "question", opts...); err != nil {
					b.Fatal(err)
				}
			}
			perRun := float64(b.Elapsed().Microseconds()) / 1000 / float64(b.N)
			b.ReportMetric(perRun, "ms/run")
			if st.name == "none" {
				base = perRun
			} else if base > 0 {
				b.ReportMetric(100*(perRun-base)/base, "overhead-%")
			}
		})
	}
}

// effortModel answers every role with fixed usage: queries 150, each
// research call 350, each reflection 230 (always asking for e.Queries new
// follow-ups), the answer 480 tokens; each reply comes after delay.
func effortModel(e research.Effort, delay time.Duration) *fake.Model {
	qs := make([]string, e.Queries)
	for i := range qs {
		qs[i] = fmt.Sprintf("q%d", i)
	}
	round := 0
	var replies []fake.Reply
	replies = append(replies, fake.JSON(schemas.SearchQueryList{Query: qs}).When(fake.Schema("SearchQueryList")).WithTokens(100, 50))
	for range e.Loops {
		round++
		follow := make([]string, e.Queries)
		for i := range follow {
			follow[i] = fmt.Sprintf("r%d-f%d", round, i)
		}
		replies = append(replies, fake.JSON(schemas.Reflection{IsSufficient: false, KnowledgeGap: "more", FollowUpQueries: follow}).When(fake.Schema("Reflection")).WithTokens(200, 30))
	}
	replies = append(replies,
		fake.Text("summary").When(fake.Contains("Google Search")).WithTokens(300, 50).Repeat(),
		fake.Text("final").When(fake.Contains("well-researched answer")).WithTokens(400, 80),
	)
	for i := range replies {
		replies[i] = replies[i].After(delay)
	}
	return fake.New(replies...)
}

var _ llm.Model = (*fake.Model)(nil)
