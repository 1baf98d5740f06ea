package app

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/schemas"
)

// stormServer speaks the OpenAI chat wire (POST /v1/chat/completions), the
// SearXNG JSON API (GET /search) and serves pages (GET /page/…); the kinds
// of call it is told to fail it answers with a status, every time (a
// storm). It counts the sends of each logical request: a model call by the
// prompt's kind, a search by its query, a page by its path.
type stormServer struct {
	*httptest.Server
	fail map[string]int           // "model:<kind>", "search", "page" → status
	slow map[string]time.Duration // the same kinds → a delay before each answer

	mu    sync.Mutex
	sends map[string]int
}

func newStormServer(t *testing.T, fail map[string]int) *stormServer {
	s := &stormServer{fail: fail, sends: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// count records a send of request key and returns the status to fail it
// with (0: answer it).
func (s *stormServer) count(kind, key string) int {
	s.mu.Lock()
	s.sends[key]++
	status, delay := s.fail[kind], s.slow[kind]
	s.mu.Unlock()
	time.Sleep(delay) // a slow provider
	return status
}

// mostSends returns the most sends of one request among those whose key
// starts with prefix, and all the counts (for messages).
func (s *stormServer) mostSends(prefix string) (int, map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	most, all := 0, map[string]int{}
	for k, n := range s.sends {
		all[k] = n
		if strings.HasPrefix(k, prefix) {
			most = max(most, n)
		}
	}
	return most, all
}

func (s *stormServer) refuse(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "0")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"error":{"message":"storm %d","type":"server_error"}}`, status)
}

func (s *stormServer) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v1/chat/completions":
		body, _ := io.ReadAll(r.Body)
		kind, content := "answer", "The answer [S1]."
		switch {
		case strings.Contains(string(body), "SearchQueryList"):
			kind, content = "queries", `{"query":["storm query"],"rationale":"r"}`
		case strings.Contains(string(body), "Summarise what the sources below say"):
			kind, content = "summary", "It says so [S1]."
		case strings.Contains(string(body), "Reflection"):
			kind, content = "reflection", `{"is_sufficient":true,"knowledge_gap":"","follow_up_queries":[]}`
		}
		if status := s.count("model:"+kind, fmt.Sprintf("model:%s:%x", kind, sha256.Sum256(body))); status != 0 {
			s.refuse(w, status)
			return
		}
		reply, _ := json.Marshal(content)
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%s}}]}\n\n", reply)
			_, _ = io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, reply)
	case r.URL.Path == "/search":
		if status := s.count("search", "search:"+r.URL.Query().Get("q")+":"+r.URL.Query().Get("pageno")); status != 0 {
			s.refuse(w, status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"query":"q","results":[{"url":%q,"title":"Storm page","content":"a snippet","engine":"e"}]}`, s.URL+"/page/1")
	case strings.HasPrefix(r.URL.Path, "/page/"):
		if status := s.count("page", "page:"+r.URL.Path); status != 0 {
			s.refuse(w, status)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<html><head><title>Storm page</title></head><body><p>Storms pass.</p></body></html>")
	default:
		http.NotFound(w, r)
	}
}

// TestRetriesDoNotMultiplyAcrossLayers runs a research run, wired as the
// CLI wires it with retries: 3, against servers answering one kind of call
// with a 429 or 503 storm, and counts the sends of each logical request:
// one retry budget per call means at most 1+3 = 4, whatever the layers
// (the client's retry loop, the graph node's retry policy, the search and
// page-read transports) — and a call that succeeded is not sent again
// because a later call of the same node failed.
func TestRetriesDoNotMultiplyAcrossLayers(t *testing.T) {
	cases := []struct {
		name string
		fail map[string]int
		// want: the most sends of one request, by the prefix of its key.
		want map[string]int
	}{
		{"model 429 storm", map[string]int{"model:queries": 429}, map[string]int{"model:queries": 4}},
		{"model 503 storm", map[string]int{"model:queries": 503}, map[string]int{"model:queries": 4}},
		{"search 429 storm", map[string]int{"search": 429}, map[string]int{"search:": 4}},
		{"search 503 storm", map[string]int{"search": 503}, map[string]int{"search:": 4}},
		{"page 503 storm", map[string]int{"page": 503}, map[string]int{"page:": 4, "search:": 1}},
		{"summary 429 storm after a good search", map[string]int{"model:summary": 429},
			map[string]int{"model:summary": 4, "search:": 1, "page:": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newStormServer(t, tc.fail)
			cfg := load(t, "", map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL + "/v1", "SEARXNG_URL": srv.URL},
				"--model", "openai:m", "--queries", "1", "--loops", "1", "--retries", "3", "--allow-private-urls")
			cfg.RetryBackoff = 1e6 // 1ms: the test counts sends, not waits
			r, err := NewResearch(context.Background(), cfg, nil, nil)
			require.NoError(t, err)
			defer r.Close()
			_, _ = r.Run(context.Background(), "why do storms pass?")
			for prefix, want := range tc.want {
				got, all := srv.mostSends(prefix)
				assert.Equal(t, want, got, "most sends of one %s request (all: %v)", prefix, all)
			}
		})
	}
}

// deep_research is exempt from --tool-timeout, and the flag's help says so
// and why: with --tool-timeout 1s, a research run whose first model reply
// alone takes 1.5 s finishes with its report, where web_search is cut off.
func TestDeepResearchIsExemptFromToolTimeout(t *testing.T) {
	srv := newStormServer(t, nil)
	srv.slow = map[string]time.Duration{"model:queries": 1500 * time.Millisecond, "search": 1500 * time.Millisecond}
	cfg := load(t, "", map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL + "/v1", "SEARXNG_URL": srv.URL},
		"--model", "openai:m", "--queries", "1", "--loops", "1", "--allow-private-urls", "--workspace", t.TempDir(), "--tool-timeout", "1s")
	a, err := NewAgent(context.Background(), cfg, AgentIO{})
	require.NoError(t, err)
	defer a.Close()

	res, err := a.Tools.Execute(context.Background(), schemas.ToolCall{ID: "1", Name: "deep_research", Arguments: json.RawMessage(`{"question":"why do storms pass?"}`)})
	require.NoError(t, err)
	assert.Empty(t, res.Error, "deep_research is not cut by --tool-timeout")
	assert.Contains(t, res.Output, "The answer")

	res, err = a.Tools.Execute(context.Background(), schemas.ToolCall{ID: "2", Name: "web_search", Arguments: json.RawMessage(`{"query":"storms"}`)})
	require.NoError(t, err)
	assert.Contains(t, res.Error, "did not finish", "web_search keeps the bound")

	var help string
	for _, k := range config.Keys() {
		if k.Name == "agent.tool_timeout" {
			help = k.Help
		}
	}
	assert.Contains(t, help, "deep_research are bounded by --timeout only: ")
	assert.Contains(t, help, "a research run takes minutes by design")
}
