package research_test

import (
	"context"
	"fmt"
	"log"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/search"
)

// pages is a search.Searcher over a fixed set of pages: a stand-in for
// SearXNG, Tavily, Brave or a local corpus, so that the examples run
// offline.
type pages []search.Result

func (pages) Name() string { return "pages" }

func (p pages) Search(context.Context, string, search.Options) ([]search.Result, error) {
	return append([]search.Result(nil), p...), nil
}

// exampleResearcher is a researcher whose model is scripted (llm/fake):
// one query, a summary citing its source by label, a sufficient
// reflection, and an answer that copies the summary's citation link.
func exampleResearcher() *research.Researcher {
	model := fake.New(
		fake.JSON(schemas.SearchQueryList{Query: []string{"raft leader election"}}).When(fake.Schema("SearchQueryList")),
		fake.Text("A follower that hears from no leader starts an election after a random timeout [S1].").When(fake.Contains("Summarise")),
		fake.JSON(schemas.Reflection{IsSufficient: true, FollowUpQueries: []string{}}).When(fake.Schema("Reflection")),
		fake.Text("A Raft follower that hears from no leader becomes a candidate after a random timeout "+
			"[raft](https://vertexaisearch.cloud.google.com/id/0-0).").When(fake.Contains("well-researched answer")),
	)
	searcher := pages{{Title: "In Search of an Understandable Consensus Algorithm", URL: "https://raft.github.io/raft.pdf",
		Content: "Raft uses randomized election timeouts to elect a leader."}}
	r, err := research.New(research.Config{QueryModel: model, Backend: &research.SearchBackend{Searcher: searcher}})
	if err != nil {
		log.Fatal(err)
	}
	return r
}

// Run researches a question and returns the cited report.
func ExampleResearcher_Run() {
	r := exampleResearcher()
	rep, err := r.Run(context.Background(), "How does Raft elect a leader?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(rep.Markdown())
	fmt.Println(len(rep.Warnings), "warnings")
	// Output:
	// A Raft follower that hears from no leader becomes a candidate after a random timeout [1](https://raft.github.io/raft.pdf).
	//
	// ## Sources
	//
	// 1. [In Search of an Understandable Consensus Algorithm](https://raft.github.io/raft.pdf)
	// 0 warnings
}

// Stream yields the run's graph events as they happen; Describe turns them
// into timeline activities, and ReportFrom turns the state of the last
// event (graph.EventEnd) into the report.
func ExampleResearcher_Stream() {
	r := exampleResearcher()
	var final research.State
	for ev, err := range r.Stream(context.Background(), "How does Raft elect a leader?") {
		if err != nil {
			log.Fatal(err)
		}
		if a, ok := research.Describe(ev); ok {
			switch a.Kind {
			case research.ActivityQueries:
				fmt.Println("queries:", a.Queries)
			case research.ActivitySearched:
				fmt.Printf("searched %q: %d sources\n", a.Query, a.Sources)
			case research.ActivityAnswered:
				fmt.Printf("answered: %d cited, %d dropped\n", a.Cited, a.Dropped)
			}
		}
		if ev.Kind == graph.EventEnd {
			final = ev.State
		}
	}
	rep := r.ReportFrom(final)
	fmt.Println(rep.Sources[0].URL)
	// Output:
	// queries: [raft leader election]
	// searched "raft leader election": 1 sources
	// answered: 1 cited, 0 dropped
	// https://raft.github.io/raft.pdf
}

// keptCalls is a research.CallJournal in memory; deepgraph's run store
// keeps them in its database, so that they outlive a killed process.
type keptCalls map[string][]byte

func (k keptCalls) Recall(_ context.Context, key string) ([]byte, bool, error) {
	data, ok := k[key]
	return data, ok, nil
}

func (k keptCalls) Record(_ context.Context, key string, data []byte) error {
	k[key] = data
	return nil
}

// Journal records the searches and page reads a run pays for before it
// uses them; a resume of the run given the same journal is served them
// from there instead of searching again.
func ExampleJournal() {
	calls := keptCalls{}
	r := exampleResearcher()
	if _, err := r.Run(context.Background(), "How does Raft elect a leader?", research.Journal(calls)); err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(calls), "call recorded")
	// Output:
	// 1 call recorded
}
