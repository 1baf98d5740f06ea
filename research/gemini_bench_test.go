package research_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/gemini"
	"github.com/deepgraph/deepgraph/research"
)

// BenchmarkGeminiConcurrentRuns starts N Gemini-grounded runs of one
// Researcher at once — 3 queries, one loop (the fake's reflection finds the
// summaries sufficient), each query grounded in 3 pages through redirects
// of their own, so that no cache shortens a run — with a model call taking
// 500 ms and a redirect and a page 300 ms each (DEEPGRAPH_BENCH_SCALE
// scales them). It reports wall ÷ the critical path of a run, its 4 model
// calls in a row (queries, research, reflection, answer): resolving the
// redirects is not on it. It also reports how many of the answers' cited
// sources show the real page (the others keep their redirect URL).
//
//	go test -run '^$' -bench GeminiConcurrentRuns -benchtime 1x ./research
func BenchmarkGeminiConcurrentRuns(b *testing.B) {
	scale := benchScale(1)
	if testing.Short() { // CI's short form (docs/testing.md): a tenth of the latencies
		scale = benchScale(0.1)
	}
	modelDelay := time.Duration(float64(500*time.Millisecond) * scale)
	w := newRedirectWorld(b)
	w.delay = time.Duration(float64(300*time.Millisecond) * scale)
	var seq atomic.Int64
	search := func(string) (string, map[string]any) {
		text := "Spain won the final. Kane scored. Berlin hosted it."
		var chunks, supports []any
		for i := range 3 {
			chunks = append(chunks, map[string]any{"web": map[string]any{"uri": w.redirect(fmt.Sprint("uniq-", seq.Add(1))), "title": "pages.test"}})
			supports = append(supports, map[string]any{"segment": map[string]any{"startIndex": 0, "endIndex": len(text)}, "groundingChunkIndices": []int{i}})
		}
		return text, map[string]any{"groundingChunks": chunks, "groundingSupports": supports}
	}
	answer := func(prompt string) string { return "Antwort " + joinMarkers(prompt) }
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		time.Sleep(modelDelay)
		serveGeminiWire(rw, r, search, answer)
	}))
	b.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096}}
	model, err := gemini.New(context.Background(), gemini.Config{APIKey: "test-key", BaseURL: srv.URL + "/", Client: llm.ClientConfig{HTTPClient: client, MaxRetries: -1}})
	if err != nil {
		b.Fatal(err)
	}
	res := w.resolver(b, research.ResolverConfig{CacheSize: 1 << 16})
	r, err := research.New(research.Config{QueryModel: model, Backend: research.GeminiBackend{Resolver: res}, Now: fixedNow})
	if err != nil {
		b.Fatal(err)
	}
	critical := 4 * modelDelay
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			var cited, real atomic.Int64
			for b.Loop() {
				var wg sync.WaitGroup
				errs := make(chan error, n)
				for range n {
					wg.Go(func() {
						rep, err := r.Run(context.Background(), "Wer gewann?")
						if err != nil {
							errs <- err
							return
						}
						for _, s := range rep.Sources {
							cited.Add(1)
							if !res.IsRedirect(s.URL) {
								real.Add(1)
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			}
			perBatch := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(perBatch)/float64(critical), "wall/critical")
			if c := cited.Load(); c > 0 {
				b.ReportMetric(float64(real.Load())/float64(c), "resolved/cited")
			}
		})
	}
	client.CloseIdleConnections()
}

// joinMarkers is the citation markers of prompt, one after another.
func joinMarkers(prompt string) string {
	out := ""
	for _, m := range markerRe.FindAllString(prompt, -1) {
		out += m + " "
	}
	return out
}
