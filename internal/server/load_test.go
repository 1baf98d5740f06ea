package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/config"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/research"
)

// The load of many clients on a server: TestLoad checks that it holds,
// BenchmarkLoad measures it. The clients are plain HTTP clients of the
// Agent Server API (loadClient) that honour the Retry-After of a 429, as a
// well-behaved client does; in BenchmarkLoad they run in a process of
// their own (this test binary again, TestLoadClient), so that the
// server's process CPU time is the server's: its HTTP, its runs' records
// and streams, and the runs themselves (with the fake model and search,
// which are in-process and cheap).

var stampRe = regexp.MustCompile(`\{(\d+)\}`)

// loadSpec is what a load of runs is: the server, how many runs, how long
// a client waits at most before it tries a refused run again.
type loadSpec struct {
	URL        string        `json:"url"`
	Runs       int           `json:"runs"`
	MaxBackoff time.Duration `json:"max_backoff"`
	// Out is where TestLoadClient writes its loadResult.
	Out string `json:"out,omitempty"`
}

// loadResult is what a load of runs showed.
type loadResult struct {
	Ends      map[string]string `json:"ends"`    // each run's status
	Refused   int64             `json:"refused"` // 429s, each tried again after its Retry-After
	Elapsed   time.Duration     `json:"elapsed"`
	Latencies []time.Duration   `json:"latencies"` // a model's token to the SSE client, sorted
	// CPU is the clients' process's CPU time (TestLoadClient).
	CPU time.Duration `json:"cpu"`
}

// loadClient is a client of the Agent Server API that a load's runs share.
type loadClient struct {
	url  string
	http *http.Client
}

func newLoadClient(url string, conns int) *loadClient {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = conns
	return &loadClient{url: url, http: &http.Client{Transport: tr}}
}

// call sends a JSON body (nil: none) and reads the answer.
func (c *loadClient) call(method, path string, body any) (int, []byte, http.Header, error) {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, nil, err
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.url+path, r)
	if err != nil {
		return 0, nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, resp.Header, err
}

// retryAfter is how long a 429's Retry-After says to wait, at most max.
func retryAfter(h http.Header, max time.Duration) time.Duration {
	secs, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || secs < 0 {
		return max
	}
	return min(time.Duration(secs)*time.Second, max)
}

// oneRun submits a run of question on a new thread — again after each
// 429, once its Retry-After has passed — follows its stream to its end,
// and reads its status.
func (c *loadClient) oneRun(question string, maxBackoff time.Duration, refused *atomic.Int64, token func(time.Duration)) (string, string, error) {
	status, data, _, err := c.call("POST", "/threads", map[string]any{})
	if err != nil || status != 200 {
		return "", "", fmt.Errorf("creating a thread: %d %s %v", status, data, err)
	}
	var th lgThread
	if err := json.Unmarshal(data, &th); err != nil {
		return "", "", err
	}
	var run lgRun
	for {
		status, data, hdr, err := c.call("POST", "/threads/"+th.ThreadID+"/runs", map[string]any{"assistant_id": "research",
			"stream_mode": "messages-tuple", "input": map[string]any{"messages": []map[string]string{{"type": "human", "content": question}}}})
		if err != nil {
			return "", "", err
		}
		if status == http.StatusTooManyRequests {
			refused.Add(1)
			time.Sleep(retryAfter(hdr, maxBackoff)) // the client's back-off, as the server asks
			continue
		}
		if status != 200 {
			return "", "", fmt.Errorf("submitting a run: %d %s", status, data)
		}
		if err := json.Unmarshal(data, &run); err != nil {
			return "", "", err
		}
		break
	}
	resp, err := c.http.Get(c.url + "/threads/" + run.ThreadID + "/runs/" + run.RunID + "/stream")
	if err != nil {
		return "", "", err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		if m := stampRe.FindSubmatch(line); m != nil {
			ns, _ := strconv.ParseInt(string(m[1]), 10, 64)
			token(time.Since(time.Unix(0, ns)))
		}
	}
	resp.Body.Close()
	if err := sc.Err(); err != nil {
		return "", "", err
	}
	status, data, _, err = c.call("GET", "/threads/"+run.ThreadID+"/runs/"+run.RunID, nil)
	if err != nil || status != 200 {
		return "", "", fmt.Errorf("reading run %s: %d %s %v", run.RunID, status, data, err)
	}
	var got lgRun
	if err := json.Unmarshal(data, &got); err != nil {
		return "", "", err
	}
	return run.RunID, got.Status, nil
}

// runLoad submits spec.Runs runs at once, each client trying a 429 again
// after its Retry-After (at most spec.MaxBackoff), and follows every run's
// stream to its end.
func runLoad(spec loadSpec) (loadResult, error) {
	c := newLoadClient(spec.URL, spec.Runs)
	defer c.http.CloseIdleConnections()
	var (
		mu      sync.Mutex
		res     = loadResult{Ends: map[string]string{}}
		refused atomic.Int64
		errs    []error
		wg      sync.WaitGroup
	)
	token := func(d time.Duration) {
		mu.Lock()
		res.Latencies = append(res.Latencies, d)
		mu.Unlock()
	}
	start := time.Now()
	for i := range spec.Runs {
		wg.Go(func() {
			id, status, err := c.oneRun(fmt.Sprintf("question %d", i), spec.MaxBackoff, &refused, token)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			res.Ends[id] = status
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.Refused = refused.Load()
	slices.Sort(res.Latencies)
	return res, errors.Join(errs...)
}

// loadClientEnv holds the loadSpec of TestLoadClient, as JSON.
const loadClientEnv = "DEEPGRAPH_TEST_LOAD_CLIENT"

// TestLoadClient is the clients' process of BenchmarkLoad: it runs the
// load its environment describes and writes what it showed, with its own
// CPU time. Without that environment it has nothing to do.
func TestLoadClient(t *testing.T) {
	raw := os.Getenv(loadClientEnv)
	if raw == "" {
		t.Skip("the clients' process of BenchmarkLoad (" + loadClientEnv + " unset)")
	}
	var spec loadSpec
	require.NoError(t, json.Unmarshal([]byte(raw), &spec))
	res, err := runLoad(spec)
	require.NoError(t, err)
	res.CPU = processCPU()
	data, err := json.Marshal(res)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(spec.Out, data, 0o600))
}

// loadInChild runs a load from a child process (TestLoadClient), whose CPU
// time is not this process's.
func loadInChild(tb testing.TB, spec loadSpec) loadResult {
	tb.Helper()
	spec.Out = filepath.Join(tb.TempDir(), "load.json")
	raw, err := json.Marshal(spec)
	require.NoError(tb, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadClient$", "-test.count=1")
	cmd.Env = append(os.Environ(), loadClientEnv+"="+string(raw))
	out, err := cmd.CombinedOutput()
	require.NoError(tb, err, "the clients' process: %s", out)
	data, err := os.ReadFile(spec.Out)
	require.NoError(tb, err)
	var res loadResult
	require.NoError(tb, json.Unmarshal(data, &res))
	return res
}

// percentile is the q-quantile of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	return sorted[int(q*float64(len(sorted)-1))]
}

// 24 runs submitted at once, against fake models with latency, to a server
// that runs 2 and queues 4: every one finishes, none is lost, the bound
// holds (more than it takes get 429 and come back), and no goroutine is
// left behind. Throughput and latency are BenchmarkLoad's.
func TestLoad(t *testing.T) {
	const runs, maxRunning, queueSize = 24, 2, 4
	before := runtime.NumGoroutine()
	ts := newTestServer(t, world{callDelay: 5 * time.Millisecond, searchDelay: 2 * time.Millisecond, tokenDelay: time.Millisecond, stamp: true},
		queueOf(maxRunning, queueSize))
	// The clients wait at most 100 ms before trying again, whatever the
	// Retry-After (a second at least): the test need not take long.
	res, err := runLoad(loadSpec{URL: ts.http.URL, Runs: runs, MaxBackoff: 100 * time.Millisecond})
	require.NoError(t, err)

	require.Len(t, res.Ends, runs, "every run was streamed to its end")
	for id, status := range res.Ends {
		assert.Equal(t, "success", status, "run %s", id)
	}
	assert.Positive(t, res.Refused, "more runs came than the server takes: some got 429 and came back")
	assert.NotEmpty(t, res.Latencies, "tokens reached the clients")

	ts.stop()
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+2 }, 30*time.Second, 20*time.Millisecond,
		"goroutines: %d before, %d after", before, runtime.NumGoroutine())
}

// The load of BenchmarkLoad: 200 runs submitted at once against fake
// models with latency (50 ms a call, 20 ms a search, 2 ms a token), to a
// server that runs 16 and queues 100; a refused client comes back after
// the Retry-After, waiting at most a second (before any run ended the
// server says 30 s).
const (
	benchRunning, benchQueue = 16, 100
	benchMaxBackoff          = time.Second
)

// loadRuns is how many runs BenchmarkLoad submits: 200, or 50 in CI's
// short form (-short, docs/testing.md).
func loadRuns() int {
	if testing.Short() {
		return 50
	}
	return 200
}

func benchWorld() world {
	return world{callDelay: 50 * time.Millisecond, searchDelay: 20 * time.Millisecond, tokenDelay: 2 * time.Millisecond, stamp: true}
}

// BenchmarkLoad measures the load above, its clients in a process of their
// own. It reports the throughput, the time from a model's token to the SSE
// client, and CPU time per run: cpu-ms/run is the server process's (getrusage:
// the server, its runs and the in-process fakes; not the clients'),
// runs-cpu-ms/run that of the same runs run in-process without a server
// (directRuns, 16 at a time), and server-cpu-ms/run the difference: what
// serving a run adds. clients-cpu-ms/run is the clients'
// process's.
//
//	go test -run '^$' -bench Load -benchtime 1x ./internal/server
func BenchmarkLoad(b *testing.B) {
	var latencies []time.Duration
	var elapsed, cpu, clients, direct time.Duration
	var refused int64
	benchRuns := loadRuns()
	for b.Loop() {
		ts := newTestServer(b, benchWorld(), queueOf(benchRunning, benchQueue))
		before := processCPU()
		res := loadInChild(b, loadSpec{URL: ts.http.URL, Runs: benchRuns, MaxBackoff: benchMaxBackoff})
		cpu += processCPU() - before
		ts.stop()
		if len(res.Ends) != benchRuns {
			b.Fatalf("%d of %d runs streamed to their end", len(res.Ends), benchRuns)
		}
		for id, status := range res.Ends {
			if status != "success" {
				b.Fatalf("run %s ended %s", id, status)
			}
		}
		latencies = append(latencies, res.Latencies...)
		elapsed += res.Elapsed
		refused += res.Refused
		clients += res.CPU

		before = processCPU()
		directRuns(b, benchRuns, benchRunning)
		direct += processCPU() - before
	}
	slices.Sort(latencies)
	if len(latencies) == 0 {
		b.Fatal("no token reached a client")
	}
	perRun := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(benchRuns*b.N) }
	b.ReportMetric(float64(benchRuns*b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(percentile(latencies, 0.5).Microseconds())/1000, "p50-token-ms")
	b.ReportMetric(float64(percentile(latencies, 0.99).Microseconds())/1000, "p99-token-ms")
	b.ReportMetric(float64(refused)/float64(b.N), "429s/op")
	b.ReportMetric(perRun(cpu), "cpu-ms/run")
	b.ReportMetric(perRun(direct), "runs-cpu-ms/run")
	b.ReportMetric(perRun(cpu-direct), "server-cpu-ms/run")
	b.ReportMetric(perRun(clients), "clients-cpu-ms/run")
}

// directRuns runs n research runs of BenchmarkLoad's world in this process
// without a server, at most running at once, each on a thread of its own
// checkpointed in SQLite, as the server's runs are.
func directRuns(tb testing.TB, n, running int) {
	tb.Helper()
	ctx := context.Background()
	st, err := app.OpenStore(ctx, &config.Config{Store: config.Store(filepath.Join(tb.TempDir(), "runs.db"))})
	require.NoError(tb, err)
	defer st.Close()
	eng := newEngine(benchWorld())
	set, err := eng.Settings(RunRequest{})
	require.NoError(tb, err)
	r, err := eng.Research(ctx, set, st.Checkpointer)
	require.NoError(tb, err)
	slots := make(chan struct{}, running)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			_, err := r.Researcher.Run(ctx, fmt.Sprintf("question %d", i), research.Thread(fmt.Sprintf("thread-%d", i)),
				research.InitialQueries(set.Queries), research.MaxLoops(set.Loops), research.Observe(func(research.Activity) {}))
			if err != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	require.Zero(tb, failed.Load(), "runs failed")
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
