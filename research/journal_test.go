package research_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/search"
)

// memJournal is a CallJournal in memory.
type memJournal struct {
	mu    sync.Mutex
	calls map[string][]byte
}

func (j *memJournal) Recall(_ context.Context, key string) ([]byte, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	d, ok := j.calls[key]
	return d, ok, nil
}

func (j *memJournal) Record(_ context.Context, key string, data []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.calls == nil {
		j.calls = map[string][]byte{}
	}
	j.calls[key] = data
	return nil
}

// countingSearcher counts its searches; fail makes them fail.
type countingSearcher struct {
	fakeSearcher
	n    atomic.Int32
	fail func(q string) error
}

func (s *countingSearcher) Search(ctx context.Context, q string, opts search.Options) ([]search.Result, error) {
	s.n.Add(1)
	if s.fail != nil {
		if err := s.fail(q); err != nil {
			return nil, err
		}
	}
	return s.fakeSearcher.Search(ctx, q, opts)
}

// TestJournalServesRecordedCalls: with a journal, a second research of the
// same query in the same run (a resume) searches and reads nothing again:
// the results come from the journal, and give the same finding.
func TestJournalServesRecordedCalls(t *testing.T) {
	searcher := &countingSearcher{fakeSearcher: fakeSearcher{results: map[string][]search.Result{
		"raft": {{Title: "Raft paper", URL: "https://raft.github.io/raft.pdf", Snippet: "snippet"}},
	}}}
	reader := &fakeReader{pages: map[string]string{"https://raft.github.io/raft.pdf": "Leaders are elected with randomized timeouts."}}
	b := &research.SearchBackend{Searcher: searcher, Reader: reader}
	model := fake.New(fake.Text("Randomized timeouts [S1]."))
	j := &memJournal{}

	// Research outside a run: the journal reaches the back end only
	// through a run's options, so a bare call makes the calls each time.
	first, err := b.Research(context.Background(), model, research.Query{Text: "raft"})
	require.NoError(t, err)
	require.EqualValues(t, 1, searcher.n.Load())

	// In runs with a journal: the first run records, the second (a resume
	// of the same run) is served from the journal.
	for range 2 {
		m := fake.New(
			queries("raft"),
			fake.Text("Randomized timeouts [S1].").When(fake.Contains(`search query "raft"`)),
			reflection(true, ""),
		)
		r := newResearcher(t, &echoModel{next: m}, b, research.Config{})
		rep, err := r.Run(context.Background(), "How does Raft elect a leader?", research.Journal(j))
		require.NoError(t, err)
		assert.Contains(t, rep.Answer, "raft.github.io")
	}
	assert.EqualValues(t, 2, searcher.n.Load(), "one search without a journal, one recorded")
	assert.Len(t, reader.read, 2, "one page read without a journal, one recorded")
	assert.Len(t, j.calls, 2, "a search and a page read recorded")
	assert.Contains(t, first.Summary, "Randomized timeouts")
}

// TestFailedSearchIsSkipped: a search that fails (after the searcher's own
// retries) is a warning naming the query; the run answers from the other
// searches. When every search failed, the run fails with
// ErrSearchesFailed naming them.
func TestFailedSearchIsSkipped(t *testing.T) {
	results := map[string][]search.Result{
		"raft":  {{Title: "Raft paper", URL: "https://raft.github.io/raft.pdf", Content: "Leaders are elected with randomized timeouts."}},
		"paxos": {{Title: "Paxos", URL: "https://paxos.example/", Content: "Paxos."}},
	}
	outage := errors.New("searxng: 503 Service Unavailable")

	t.Run("one of two fails", func(t *testing.T) {
		searcher := &countingSearcher{fakeSearcher: fakeSearcher{results: results}, fail: func(q string) error {
			if q == "paxos" {
				return outage
			}
			return nil
		}}
		m := fake.New(
			queries("raft", "paxos"),
			fake.Text("Randomized timeouts [S1].").When(fake.Contains(`search query "raft"`)),
			reflection(true, ""),
		)
		r := newResearcher(t, &echoModel{next: m}, &research.SearchBackend{Searcher: searcher}, research.Config{})
		rep, err := r.Run(context.Background(), "How does Raft elect a leader?")
		require.NoError(t, err)
		assert.EqualValues(t, 2, searcher.n.Load(), "the failed search is not retried by the node")
		assert.Contains(t, rep.Answer, "raft.github.io")
		var failed *research.Warning
		for i := range rep.Warnings {
			if rep.Warnings[i].Kind == research.WarningSearchFailed {
				failed = &rep.Warnings[i]
			}
		}
		require.NotNil(t, failed, "the report says a search failed: %+v", rep.Warnings)
		assert.Equal(t, 1, failed.Count)
		assert.Equal(t, []string{`"paxos": ` + outage.Error()}, failed.Items, "the report names the query and why")
	})

	t.Run("all fail", func(t *testing.T) {
		searcher := &countingSearcher{fakeSearcher: fakeSearcher{results: results}, fail: func(string) error { return outage }}
		m := fake.New(queries("raft", "paxos"), reflection(true, ""))
		r := newResearcher(t, &echoModel{next: m}, &research.SearchBackend{Searcher: searcher}, research.Config{})
		_, err := r.Run(context.Background(), "How does Raft elect a leader?")
		require.ErrorIs(t, err, research.ErrSearchesFailed)
		assert.Contains(t, err.Error(), `"raft": `+outage.Error())
		assert.Contains(t, err.Error(), `"paxos": `+outage.Error())
	})
}
