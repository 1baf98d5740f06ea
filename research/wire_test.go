package research_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/gemini"
	"github.com/deepgraph/deepgraph/research"
)

// geminiWire is a fake Gemini REST server for the research graph. It holds
// each Google Search request until `round` of them are in flight at once,
// so a run only succeeds if a round's web research runs concurrently.
type geminiWire struct {
	round    int
	mu       sync.Mutex
	inFlight int
	peak     int
	fellBack int // requests answered after waiting out the fallback
	all      chan struct{}
}

func (f *geminiWire) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serveGeminiWire(w, r, f.search, func(prompt string) string {
		return "Antwort " + strings.Join(markerRe.FindAllString(prompt, -1), " ")
	})
}

// search answers a Google Search request once `round` of them are in
// flight.
func (f *geminiWire) search(prompt string) (string, map[string]any) {
	f.mu.Lock()
	f.inFlight++
	f.peak = max(f.peak, f.inFlight)
	if f.inFlight == f.round {
		close(f.all)
	}
	f.mu.Unlock()
	select {
	case <-f.all:
	case <-time.After(time.Minute):
		f.mu.Lock()
		f.fellBack++
		f.mu.Unlock()
	}
	f.mu.Lock()
	f.inFlight--
	f.mu.Unlock()
	q := prompt[strings.Index(prompt, `"`)+1:]
	q = q[:strings.Index(q, `"`)]
	text := "Über " + q + ": Fakten."
	return text, map[string]any{
		"groundingChunks":   []any{map[string]any{"web": map[string]any{"uri": "https://redirect.example/" + q, "title": q + ".org"}}},
		"groundingSupports": []any{map[string]any{"segment": map[string]any{"endIndex": len(text)}, "groundingChunkIndices": []int{0}}},
	}
}

// serveGeminiWire answers one Gemini REST request of a research run, unary
// or streamed: the query writer's three queries (q1, q2, q3), a sufficient
// reflection, search(prompt) for a Google Search request (the reply's text
// and grounding metadata) and answer(prompt) for the final answer.
func serveGeminiWire(w http.ResponseWriter, r *http.Request, search func(prompt string) (string, map[string]any), answer func(prompt string) string) {
	var req struct {
		Contents []struct {
			Parts []struct{ Text string } `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			GoogleSearch *struct{} `json:"googleSearch"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseJSONSchema *struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"responseJsonSchema"`
		} `json:"generationConfig"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	prompt := req.Contents[len(req.Contents)-1].Parts[0].Text
	var text string
	var grounding map[string]any
	switch {
	case len(req.Tools) > 0 && req.Tools[0].GoogleSearch != nil:
		text, grounding = search(prompt)
	case req.GenerationConfig.ResponseJSONSchema != nil && req.GenerationConfig.ResponseJSONSchema.Properties["query"] != nil:
		text = `{"query": ["q1", "q2", "q3"], "rationale": "three aspects"}`
	case req.GenerationConfig.ResponseJSONSchema != nil:
		text = `{"is_sufficient": true, "knowledge_gap": "", "follow_up_queries": []}`
	default:
		text = answer(prompt)
	}
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP"}
	if grounding != nil {
		cand["groundingMetadata"] = grounding
	}
	body, _ := json.Marshal(map[string]any{"candidates": []any{cand},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}})
	if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", body)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func TestARoundsRequestsAreInFlightTogether(t *testing.T) {
	fake := &geminiWire{round: 3, all: make(chan struct{})}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	model, err := gemini.New(context.Background(), gemini.Config{APIKey: "test-key", BaseURL: srv.URL + "/", Client: llm.ClientConfig{HTTPClient: srv.Client(), MaxRetries: -1}})
	require.NoError(t, err)
	r := newResearcher(t, model, research.GeminiBackend{}, research.Config{})

	rep, err := r.Run(context.Background(), "Wer gewann?")
	require.NoError(t, err)
	fake.mu.Lock()
	assert.Zero(t, fake.fellBack, "a request waited for the fallback instead of its round")
	assert.Equal(t, 3, fake.peak, "all three research requests were in flight at once")
	fake.mu.Unlock()
	require.Len(t, rep.Sources, 3)
	assert.Contains(t, rep.Answer, "[1](https://redirect.example/q1)")
	assert.Equal(t, 3, rep.Usage[llm.RoleResearch].Calls)
}
