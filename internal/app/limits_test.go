package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// TestLimits: the bounds are off by default, set ones apply, and a set one
// below what a round puts in flight (queries; queries × 3 pages) is raised.
func TestLimits(t *testing.T) {
	tests := []struct {
		name                string
		args                []string
		model, search, page int
	}{
		{"off by default", nil, 0, 0, 0},
		{"set above a round's fan-out", []string{"--max-concurrency", "16", "--search-concurrency", "8", "--page-concurrency", "40"}, 16, 8, 40},
		{"raised to a round's fan-out", []string{"--max-concurrency", "2", "--search-concurrency", "1", "--page-concurrency", "4"}, 3, 3, 9},
		{"raised with the effort's queries", []string{"--effort", "high", "--max-concurrency", "2", "--search-concurrency", "2", "--page-concurrency", "2"}, 5, 5, 15},
		{"raised with --queries", []string{"--queries", "10", "--max-concurrency", "8", "--search-concurrency", "4", "--page-concurrency", "4"}, 10, 10, 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := load(t, "", nil, tt.args...)
			assert.Equal(t, tt.model, modelLimit(cfg), "model calls")
			assert.Equal(t, tt.model, ClientConfig(cfg).MaxConcurrency, "the LLM client policy")
			assert.Equal(t, tt.search, searchLimit(cfg), "searches")
			assert.Equal(t, tt.search, SearchHTTP(cfg, nil).MaxConcurrency, "the search providers' policy")
			assert.Equal(t, tt.page, pageLimit(cfg), "page reads")
		})
	}
}

// TestModelCallsUnboundedByDefault: with default settings, twenty calls to
// one provider are all in flight at once (the old default bound was 8).
func TestModelCallsUnboundedByDefault(t *testing.T) {
	const calls = 20
	var inFlight atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		<-release
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	defer srv.Close()
	unblock := sync.OnceFunc(func() { close(release) })
	defer unblock()
	cfg := load(t, "", map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL + "/v1"}, "--model", "openai:m")
	m, err := OpenModels(context.Background(), cfg, nil)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			_, err := m.Model(llm.RoleResearch).Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi " + strconv.Itoa(i))})
			assert.NoError(t, err)
		})
	}
	require.Eventually(t, func() bool { return inFlight.Load() == calls }, 30*time.Second, time.Millisecond,
		"all %d calls reach the provider before any is answered", calls)
	unblock()
	wg.Wait()
}
