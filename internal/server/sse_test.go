package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/runstore"
)

// A client that drops the stream mid-answer and comes back with
// Last-Event-ID gets exactly what it missed: together its two reads are
// the whole log, no event lost, none twice. One that joins after the run
// gets the whole log too.
func TestStreamReconnect(t *testing.T) {
	// Tokens reach the stream as they come (a token joins the last token
	// event only while no stream took it): ~20 tokens 30 ms apart make
	// several token events.
	ts := newTestServer(t, world{tokenDelay: 30 * time.Millisecond, callDelay: 5 * time.Millisecond})
	run := ts.ask(RunRequest{Input: "q", Effort: "medium"})

	ctx, cancel := context.WithCancel(context.Background())
	resp := ts.stream(ctx, run, 0)
	tokens := 0
	first := readSSE(t, resp.Body, func(ev sseEvent) bool {
		if ev.Type == EventToken {
			tokens++
		}
		return tokens == 2
	})
	cancel() // the client goes, mid-answer
	resp.Body.Close()
	require.Equal(t, EventToken, first[len(first)-1].Type)

	resp = ts.stream(context.Background(), run, first[len(first)-1].ID)
	second := readSSE(t, resp.Body, nil)
	resp.Body.Close()
	require.NotEmpty(t, second)
	assert.Equal(t, EventEnd, second[len(second)-1].Type)
	ts.waitRun(run, runstore.StatusDone)

	resp = ts.stream(context.Background(), run, 0)
	whole := readSSE(t, resp.Body, nil)
	resp.Body.Close()
	assert.Equal(t, whole, append(first, second...), "the two reads are the whole log, in order")
	for i := 1; i < len(whole); i++ {
		assert.Equal(t, whole[i-1].ID+1, whole[i].ID, "ids follow each other")
	}
	// ?after= does what Last-Event-ID does (for clients that cannot set
	// headers).
	status, data, _ := ts.do("GET", "/threads/"+run.ThreadID+"/runs/"+run.ID+"/stream?after="+strconv.FormatInt(whole[len(whole)-2].ID, 10), nil)
	require.Equal(t, 200, status)
	assert.Equal(t, fmt.Sprintf("id: %d\nevent: end\ndata: %s\n\n", whole[len(whole)-1].ID, whole[len(whole)-1].Data), string(data))
}

// A run in flight when the server stops is recorded as interrupted, with
// what it had finished stored; the next server resumes it (when told to)
// and it finishes without repeating finished work.
func TestRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	eng := newEngine(world{queries: 2, block: "query 2"})
	ts := startTestServer(t, path, eng, queueOf(1, 4))
	inFlight := ts.ask(RunRequest{Input: "in flight", Effort: "medium"})
	require.Eventually(t, func() bool { return countQuery(eng.search, "query 2") == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return countQuery(eng.search, "query 1") == 1 }, 10*time.Second, 5*time.Millisecond)
	time.Sleep(50 * time.Millisecond) // query 1's research is stored
	queryCalls := eng.model.script.Calls()
	ts.stop()

	eng.search.w.block = ""
	again := startTestServer(t, path, eng, queueOf(1, 4), func(o *Options, _ *testEngine) { o.ResumeInterrupted = true })
	done := again.waitRun(inFlight, runstore.StatusDone)
	assert.Equal(t, 1, countQuery(eng.search, "query 1"), "the search that had finished was not made again")
	assert.Equal(t, 2, countQuery(eng.search, "query 2"), "the one in flight was")
	generated := 0
	for _, c := range eng.model.script.Calls()[:len(queryCalls)] {
		if c.Request.SchemaName == "SearchQueryList" {
			generated++
		}
	}
	assert.Equal(t, 1, generated, "the queries were written once, before the stop")
	var rep struct{ Sources []struct{ URL string } }
	require.NoError(t, json.Unmarshal(done.Report, &rep))
	assert.Len(t, rep.Sources, 4, "the report cites what both stretches found")

	// Its stream tells the story: the stop, then the resumed stretch.
	resp := again.stream(context.Background(), inFlight, 0)
	defer resp.Body.Close()
	var statuses []string
	for _, ev := range readSSE(t, resp.Body, nil) {
		if ev.Type == EventStatus {
			var s statusData
			require.NoError(t, json.Unmarshal([]byte(ev.Data), &s))
			statuses = append(statuses, string(s.Status))
		}
	}
	assert.Equal(t, []string{"queued", "running", "interrupted", "queued", "running", "done"}, statuses)
}

// Without ResumeInterrupted a stopped run waits as interrupted for a resume
// request; a queued run runs at the next start.
func TestRestartWithoutResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	eng := newEngine(world{block: "query 1"})
	ts := startTestServer(t, path, eng, queueOf(1, 4))
	run := ts.ask(RunRequest{Input: "q"})
	ts.waitRun(run, runstore.StatusRunning)
	queued := ts.ask(RunRequest{Input: "queued"})
	ts.stop()
	eng.search.w.block = ""
	again := startTestServer(t, path, eng, queueOf(1, 4))
	again.waitRun(queued, runstore.StatusDone)
	got := again.waitRun(run, runstore.StatusInterrupted)
	assert.Equal(t, stoppedByServer, got.Error)
	call[Run](again, "POST", "/threads/"+run.ThreadID+"/runs/"+run.ID+"/resume", map[string]any{}, 202)
	again.waitRun(run, runstore.StatusDone)
}

var stampRe = regexp.MustCompile(`\{(\d+)\}`)

// loadResult is what a load of runs showed.
type loadResult struct {
	ends      map[string]string // each run's last stream event
	refused   int64             // 429s, each retried
	bound     int64             // the most runs running and waiting at once, sampled
	elapsed   time.Duration
	latencies []time.Duration // a model's token to the SSE client, sorted
}

// load submits runs at once against ts, each client retrying a 429 after
// a pause, and follows every run's stream to its end.
func load(tb testing.TB, ts *testServer, runs int) loadResult {
	var (
		mu  sync.Mutex
		res = loadResult{ends: map[string]string{}}
	)
	var refused, bound atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the bound, sampled
		defer close(sampled)
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(2 * time.Millisecond):
				r, w, _ := ts.srv.runs.counts()
				if int64(r+w) > bound.Load() {
					bound.Store(int64(r + w))
				}
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			th := call[Thread](ts, "POST", "/threads", map[string]any{}, 201)
			var run Run
			for {
				status, data, _ := ts.do("POST", "/threads/"+th.ID+"/runs", RunRequest{Input: fmt.Sprintf("question %d", i)})
				if status == http.StatusTooManyRequests {
					refused.Add(1)
					time.Sleep(20 * time.Millisecond) // a client's back-off
					continue
				}
				require.Equal(tb, 202, status, "%s", data)
				require.NoError(tb, json.Unmarshal(data, &run))
				break
			}
			resp := ts.stream(context.Background(), run, 0)
			defer resp.Body.Close()
			evs := readSSE(tb, resp.Body, func(ev sseEvent) bool {
				if ev.Type == EventToken {
					if m := stampRe.FindStringSubmatch(ev.Data); m != nil {
						ns, _ := strconv.ParseInt(m[1], 10, 64)
						d := time.Since(time.Unix(0, ns))
						mu.Lock()
						res.latencies = append(res.latencies, d)
						mu.Unlock()
					}
				}
				return false
			})
			require.NotEmpty(tb, evs)
			mu.Lock()
			res.ends[run.ID] = evs[len(evs)-1].Data
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	close(stopSampling)
	<-sampled
	res.refused, res.bound = refused.Load(), bound.Load()
	sort.Slice(res.latencies, func(i, j int) bool { return res.latencies[i] < res.latencies[j] })
	return res
}

// percentile is the q-quantile of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	return sorted[int(q*float64(len(sorted)-1))]
}

// 24 runs submitted at once, against fake models with latency, to a server
// that runs 2 and queues 4: every one finishes, none is lost, the queue's
// bound holds (more than it takes get 429 and come back), and no goroutine
// is left behind. Throughput and latency are BenchmarkLoad's.
func TestLoad(t *testing.T) {
	const runs, maxRunning, queueSize = 24, 2, 4
	before := runtime.NumGoroutine()
	ts := newTestServer(t, world{callDelay: 5 * time.Millisecond, searchDelay: 2 * time.Millisecond, tokenDelay: time.Millisecond, stamp: true},
		queueOf(maxRunning, queueSize))
	res := load(t, ts, runs)

	require.Len(t, res.ends, runs, "every run was streamed to its end")
	for id, end := range res.ends {
		assert.JSONEq(t, `{"status":"done"}`, end, "run %s", id)
	}
	all := call[RunList](ts, "GET", "/runs?limit=100", nil, 200)
	assert.Len(t, all.Runs, runs)
	for _, r := range all.Runs {
		assert.Equal(t, runstore.StatusDone, r.Status)
	}
	assert.LessOrEqual(t, ts.srv.Peak(), maxRunning, "never more than max_running at once")
	assert.LessOrEqual(t, res.bound, int64(maxRunning+queueSize), "never more than the queue holds")
	assert.Positive(t, res.refused, "more runs came than the queue takes: some got 429 and came back")
	assert.NotEmpty(t, res.latencies, "tokens reached the clients")

	ts.stop()
	ts.http = nil
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+2 }, 30*time.Second, 20*time.Millisecond,
		"goroutines: %d before, %d after", before, runtime.NumGoroutine())
}

// BenchmarkLoad: 200 runs submitted at once against fake models with
// latency (50 ms a call, 20 ms a search, 2 ms a token), to a server that
// runs 16 and queues 100. It reports the throughput and the time from a
// model's token to the SSE client.
//
//	go test -run '^$' -bench Load -benchtime 1x ./internal/server
func BenchmarkLoad(b *testing.B) {
	const runs, maxRunning, queueSize = 200, 16, 100
	var latencies []time.Duration
	var elapsed time.Duration
	var refused int64
	for b.Loop() {
		ts := newTestServer(b, world{callDelay: 50 * time.Millisecond, searchDelay: 20 * time.Millisecond, tokenDelay: 2 * time.Millisecond, stamp: true},
			queueOf(maxRunning, queueSize))
		res := load(b, ts, runs)
		ts.stop()
		if len(res.ends) != runs {
			b.Fatalf("%d of %d runs streamed to their end", len(res.ends), runs)
		}
		latencies = append(latencies, res.latencies...)
		elapsed += res.elapsed
		refused += res.refused
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	if len(latencies) == 0 {
		b.Fatal("no token reached a client")
	}
	b.ReportMetric(float64(runs*b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(percentile(latencies, 0.5).Microseconds())/1000, "p50-token-ms")
	b.ReportMetric(float64(percentile(latencies, 0.99).Microseconds())/1000, "p99-token-ms")
	b.ReportMetric(float64(refused)/float64(b.N), "429s/op")
}
