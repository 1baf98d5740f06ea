package research_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/sqlite"
	"github.com/deepgraph/deepgraph/internal/app"
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

// Benchmarks of issue 13's run-level goals: a run's wall time against its
// critical path, and many runs at once. They go through the wiring a user
// gets (internal/app from a configuration with default settings), so the
// providers' concurrency limits are the ones measured, against fake
// services on loopback: an OpenAI-compatible model server, a SearXNG
// server and a page server, each answering after a fixed latency.

// latencies are the fake services' answer times.
type latencies struct{ model, search, page time.Duration }

// fullScale is the measurement: model 500 ms, search 200 ms, page
// 100 ms. Shorter scales keep the ratios but make the HTTP and engine
// overhead weigh more.
var fullScale = latencies{500 * time.Millisecond, 200 * time.Millisecond, 100 * time.Millisecond}

func (l latencies) scaled(f float64) latencies {
	s := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	return latencies{s(l.model), s(l.search), s(l.page)}
}

// criticalPath is the longest chain of dependent calls of a search-backend
// run with every loop used: the queries, then per loop a search, a page, a
// summary and a reflection, then the answer.
func (l latencies) criticalPath(loops int) time.Duration {
	return l.model + time.Duration(loops)*(l.search+l.page+2*l.model) + l.model
}

// fakeServices are the model, search and page servers of the run-level
// benchmarks. Each query and follow-up is unique, and so is each page URL,
// so no cache shortens a run.
type fakeServices struct {
	model, search, pages *httptest.Server
	seq                  atomic.Int64
	// pageText, when set, follows each page's first line: a page as long
	// as real ones.
	pageText string
	// summarySentences is how many sentences a summary has (default 18:
	// ~1,500 characters before its markers become links).
	summarySentences int
}

func newFakeServices(b testing.TB, lat latencies) *fakeServices {
	f := &fakeServices{}
	f.model = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The request is scanned, not decoded: the fake's own CPU counts
		// in the benchmarks (cpu-ms/run), and the few things it needs
		// are found by their JSON keys.
		body, err := io.ReadAll(r.Body)
		if err != nil || !json.Valid(body) {
			http.Error(w, "the request is not JSON", http.StatusBadRequest)
			return
		}
		schema, structured := scanSchemaName(body)
		var content string
		switch {
		case structured && strings.Contains(strings.ToLower(schema), "reflection"):
			content = benchJSON(schemas.Reflection{KnowledgeGap: "more", FollowUpQueries: f.queries(20)})
		case structured:
			content = benchJSON(schemas.SearchQueryList{Query: f.queries(20), Rationale: "r"})
		case bytes.Contains(body, []byte("well-researched answer")):
			content = "The answer."
		default:
			content = "A summary of the results."
		}
		stream := bytes.Contains(body, []byte(`"stream":true`))
		time.Sleep(lat.model)
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%s},\"finish_reason\":\"stop\"}]}\n\n", benchJSON(content))
			_, _ = fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"fake\",\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":10,\"total_tokens\":110}}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"fake","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`,
			benchJSON(content))
	}))
	f.pages = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(lat.page)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintf(w, "The page at %s says something worth citing.\n%s", r.URL.Path, f.pageText)
	}))
	f.search = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(lat.search)
		n := f.seq.Add(1)
		type result struct {
			URL     string `json:"url"`
			Title   string `json:"title"`
			Content string `json:"content"`
		}
		var out struct {
			Query   string   `json:"query"`
			Results []result `json:"results"`
		}
		out.Query = r.URL.Query().Get("q")
		for i := range 5 {
			out.Results = append(out.Results, result{URL: fmt.Sprintf("%s/s%d/p%d", f.pages.URL, n, i), Title: "t", Content: "a snippet"})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	b.Cleanup(func() {
		f.model.Close()
		f.search.Close()
		f.pages.Close()
	})
	return f
}

// scanSchemaName finds the name of a chat completion request's
// response_format JSON schema, and whether it has a response_format.
func scanSchemaName(body []byte) (string, bool) {
	_, rest, ok := bytes.Cut(body, []byte(`"response_format":`))
	if !ok {
		return "", false
	}
	_, rest, ok = bytes.Cut(rest, []byte(`"name":"`))
	if !ok {
		return "", true
	}
	name, _, _ := bytes.Cut(rest, []byte(`"`))
	return string(name), true
}

// queries returns n fresh queries (the run caps them at its own number).
func (f *fakeServices) queries(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("query %d", f.seq.Add(1))
	}
	return out
}

func benchJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// openResearch builds a researcher the way the CLI does, from the
// configuration the variables vars set on top of the defaults.
func openResearch(b *testing.B, f *fakeServices, vars map[string]string) *app.Research {
	b.Helper()
	return openResearchAt(b, f.model.URL, f.search.URL, vars)
}

// openResearchAt is openResearch against the fake model and search
// engine at these URLs.
func openResearchAt(b *testing.B, modelURL, searchURL string, vars map[string]string) *app.Research {
	b.Helper()
	for _, k := range config.Keys() {
		for _, v := range k.Env {
			b.Setenv(v, "")
		}
	}
	b.Setenv(config.EnvConfigFile, "")
	env := map[string]string{
		"OPENAI_API_KEY":               "k",
		"OPENAI_BASE_URL":              modelURL + "/v1",
		"DEEPGRAPH_MODEL":              "openai:fake",
		"SEARXNG_URL":                  searchURL,
		"DEEPGRAPH_ALLOW_PRIVATE_URLS": "true",
	}
	for k, v := range vars {
		env[k] = v
	}
	for k, v := range env {
		b.Setenv(k, v)
	}
	dir := b.TempDir()
	cfg, err := config.Loader{UserConfigDir: func() (string, error) { return dir, nil }}.Load()
	if err != nil {
		b.Fatal(err)
	}
	r, err := app.NewResearch(context.Background(), cfg, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Close)
	return r
}

// benchScale is the latency scale of the wall ÷ critical path benchmark
// (DEEPGRAPH_BENCH_SCALE overrides it; 1 is the full scale).
func benchScale(def float64) float64 {
	if s := os.Getenv("DEEPGRAPH_BENCH_SCALE"); s != "" {
		if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 {
			return f
		}
	}
	return def
}

// BenchmarkCriticalPath reports a run's wall time ÷ its critical path (the
// longest chain of dependent calls) at every effort and with 10 queries in
// one loop, every loop used, with default limits. 1.00 means nothing waited
// behind a limit; each wave a limit splits a step into adds a call's time.
func BenchmarkCriticalPath(b *testing.B) {
	lat := fullScale.scaled(benchScale(0.2))
	cases := []struct {
		name           string
		queries, loops int
		vars           map[string]string
	}{
		{"effort=low", 1, 1, map[string]string{"DEEPGRAPH_EFFORT": "low"}},
		{"effort=medium", 3, 3, map[string]string{"DEEPGRAPH_EFFORT": "medium"}},
		{"effort=high", 5, 10, map[string]string{"DEEPGRAPH_EFFORT": "high"}},
		{"queries=10,loops=1", 10, 1, map[string]string{"DEEPGRAPH_NUMBER_OF_INITIAL_QUERIES": "10", "DEEPGRAPH_MAX_RESEARCH_LOOPS": "1"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			f := newFakeServices(b, lat)
			r := openResearch(b, f, c.vars)
			for b.Loop() {
				rep, err := r.Run(context.Background(), "question")
				if err != nil {
					b.Fatal(err)
				}
				if got := len(rep.Queries); got != c.queries*c.loops {
					b.Fatalf("the run searched %d queries, want %d (%d per loop): the fake services no longer drive every loop", got, c.queries*c.loops, c.queries)
				}
			}
			perRun := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(perRun)/float64(lat.criticalPath(c.loops)), "wall/critical")
		})
	}
}

// BenchmarkConcurrentRuns starts N runs of one researcher at once (default
// settings: 3 queries, 2 loops, every loop used; the full-scale
// latencies) and reports runs/s, the slowdown against one run's critical
// path, the CPU time per run (getrusage: cpu-ms/run is this process's, the
// runs'; fakes-cpu-ms/run is that of the fake services, which run in a
// process of their own on the same cores — in this one, their ends of the
// connections took more open files than a machine allows at 1,000 runs),
// the peak RSS (VmHWM, reset before each case where
// the kernel allows; it is the whole process's) and the goroutines left
// after. On 2 cores, N runs fit in one run's time only while N × cpu-ms/run
// stays well under 2 × the critical path.
func BenchmarkConcurrentRuns(b *testing.B) {
	lat, sizes := fullScale.scaled(benchScale(1)), []int{1, 10, 100, 1000}
	if testing.Short() { // CI's short form (docs/testing.md): a tenth of the latencies, up to 100 runs
		lat, sizes = fullScale.scaled(benchScale(0.1)), []int{1, 10, 100}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			openFilesFor(b, n)
			f := startFakesProcess(b, lat)
			r := openResearchAt(b, f.Model, f.Search, nil)
			resetPeakRSS()
			cpu0 := processCPU()
			for b.Loop() {
				var wg sync.WaitGroup
				errs := make(chan error, n)
				for range n {
					wg.Go(func() {
						if _, err := r.Run(context.Background(), "question"); err != nil {
							errs <- err
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			}
			cpu := processCPU() - cpu0
			perBatch := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(n*b.N), "cpu-ms/run")
			// The fakes' process ends here: its connections close, and
			// the runs' idle ones with them.
			r.Backend.Close()
			b.ReportMetric(float64(f.stop(b).Microseconds())/1000/float64(n*b.N), "fakes-cpu-ms/run")
			b.ReportMetric(float64(n)/perBatch.Seconds(), "runs/s")
			b.ReportMetric(float64(perBatch)/float64(lat.criticalPath(research.DefaultMaxLoops)), "wall/critical")
			if kb, ok := peakRSS(); ok {
				b.ReportMetric(float64(kb)/1024, "peak-RSS-MiB")
			}
			// The clients' ends of thousands of idle connections take a
			// while to see theirs closed: give them up to 5 s to settle.
			for i := 0; i < 50 && runtime.NumGoroutine() > 100; i++ {
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond)
			b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines-after")
		})
	}
}

// filesPerRun is what a run of BenchmarkConcurrentRuns holds open at its
// widest step, with margin: a connection to the model and to the search
// engine per query and to each page it reads, 3 queries of 3 pages (the
// fakes' ends are in their own process).
const filesPerRun = 16

// openFilesFor makes room for n runs' open files: it raises the process's
// limit (RLIMIT_NOFILE; Go raised the soft limit to the hard one at start)
// where it is lower, and skips, saying how, where it cannot be raised. At
// 1,000 runs the in-process fakes need ~25,000 descriptors, more than
// the 20,000 some machines allow.
func openFilesFor(b *testing.B, n int) {
	need := uint64(n*filesPerRun + 1024)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= need {
		return
	}
	raised := syscall.Rlimit{Cur: need, Max: max(lim.Max, need)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
		b.Skipf("%d runs with in-process fakes need %d open files; the limit is %d and could not be raised (%v): run with ulimit -n %d or more", n, need, lim.Cur, err, need)
	}
	b.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS resets the process's VmHWM (Linux: clear_refs 5); it is a
// no-op where that is not allowed.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS reads VmHWM, in KiB, from /proc/self/status.
func peakRSS() (int64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}
