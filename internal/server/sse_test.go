package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sseEvent is one event read from a stream.
type sseEvent struct {
	ID   int64
	Type string
	Data string
}

// readSSE reads a stream's events until it ends or stop returns true.
func readSSE(t testing.TB, body io.Reader, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Type != "" {
				out = append(out, cur)
				if stop != nil && stop(cur) {
					return out
				}
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			cur.ID, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			cur.Type = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.Data = line[6:]
		}
	}
	return out
}

// join opens a run's stream (all its modes) after an event id.
func (ts *testServer) join(ctx context.Context, r lgRun, after int64) *http.Response {
	ts.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", ts.http.URL+"/threads/"+r.ThreadID+"/runs/"+r.RunID+"/stream", nil)
	require.NoError(ts.t, err)
	if after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	if ts.token != "" {
		req.Header.Set("X-Api-Key", ts.token)
	}
	resp, err := ts.http.Client().Do(req)
	require.NoError(ts.t, err)
	require.Equal(ts.t, 200, resp.StatusCode)
	return resp
}

// ask starts a research run of question with effort ("": the default) on
// a new thread (background, streaming the modes given).
func (ts *testServer) ask(effort, question string, modes ...string) lgRun {
	ts.t.Helper()
	th := ts.newThread()
	return lgCall[lgRun](ts, "POST", "/threads/"+th.ThreadID+"/runs", map[string]any{"assistant_id": "research", "stream_mode": modes,
		"config": map[string]any{"configurable": map[string]string{"effort": effort}},
		"input":  map[string]any{"messages": []map[string]string{{"type": "human", "content": question}}}}, 200)
}

// waitRun polls a run until its status is one of want.
func (ts *testServer) waitRun(r lgRun, want ...string) lgRun {
	ts.t.Helper()
	var got lgRun
	require.Eventually(ts.t, func() bool {
		got = lgCall[lgRun](ts, "GET", "/threads/"+r.ThreadID+"/runs/"+r.RunID, nil, 200)
		for _, w := range want {
			if got.Status == w {
				return true
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond, "run %s never became %v", r.RunID, want)
	return got
}

// A client that drops the stream mid-answer and comes back with
// Last-Event-ID gets exactly what it missed: together its two reads are
// the whole log, no event lost, none twice. One that joins after the run
// gets the whole log too.
func TestStreamReconnect(t *testing.T) {
	ts := newTestServer(t, world{tokenDelay: 30 * time.Millisecond, callDelay: 5 * time.Millisecond})
	run := ts.ask("medium", "q", "values", "messages-tuple", "custom")

	ctx, cancel := context.WithCancel(context.Background())
	resp := ts.join(ctx, run, 0)
	tokens := 0
	first := readSSE(t, resp.Body, func(ev sseEvent) bool {
		if ev.Type == "messages" {
			tokens++
		}
		return tokens == 2
	})
	cancel() // the client goes, mid-answer
	resp.Body.Close()
	require.Equal(t, "messages", first[len(first)-1].Type)

	resp = ts.join(context.Background(), run, first[len(first)-1].ID)
	second := readSSE(t, resp.Body, nil)
	resp.Body.Close()
	require.NotEmpty(t, second)
	ts.waitRun(run, "success")

	resp = ts.join(context.Background(), run, 0)
	whole := readSSE(t, resp.Body, nil)
	resp.Body.Close()
	assert.Equal(t, whole, append(first, second...), "the two reads are the whole log, in order")
	for i := 1; i < len(whole); i++ {
		assert.Equal(t, whole[i-1].ID+1, whole[i].ID, "ids follow each other")
	}
}

// A run in flight when the server stops is recorded as interrupted, with
// what it had finished kept; the next server continues it (when told to)
// and it finishes without repeating finished work.
func TestRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	eng := newEngine(world{queries: 2, block: "query 2"})
	ts := startTestServer(t, path, eng, queueOf(1, 4))
	inFlight := ts.ask("medium", "in flight")
	require.Eventually(t, func() bool { return countQuery(eng.search, "query 2") == 1 }, 30*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return countQuery(eng.search, "query 1") == 1 }, 30*time.Second, 5*time.Millisecond)
	time.Sleep(50 * time.Millisecond) // query 1's research is stored
	queryCalls := eng.model.script.Calls()
	ts.stop()

	eng.search.w.block = ""
	again := startTestServer(t, path, eng, queueOf(1, 4), func(o *Options, _ *testEngine) { o.ResumeInterrupted = true })
	var runs []lgRun
	require.Eventually(t, func() bool {
		runs = lgCall[[]lgRun](again, "GET", "/threads/"+inFlight.ThreadID+"/runs", nil, 200)
		return len(runs) == 2 && runs[0].Status == "success"
	}, 30*time.Second, 10*time.Millisecond, "the interrupted run is continued")
	assert.Equal(t, "interrupted", runs[1].Status)
	assert.Equal(t, 1, countQuery(eng.search, "query 1"), "the search that had finished was not made again")
	assert.Equal(t, 2, countQuery(eng.search, "query 2"), "the one in flight was")
	generated := 0
	for _, c := range eng.model.script.Calls()[:len(queryCalls)] {
		if c.Request.SchemaName == "SearchQueryList" {
			generated++
		}
	}
	assert.Equal(t, 1, generated, "the queries were written once, before the stop")
	assert.Len(t, again.lgRunValues(runs[0]).Sources, 4, "the answer cites what both stretches found")
}

// Without ResumeInterrupted a stopped run waits as interrupted for a run
// with input null; a run waiting behind it runs at the next start.
func TestRestartWithoutResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	eng := newEngine(world{block: "query 1"})
	ts := startTestServer(t, path, eng, queueOf(1, 4))
	run := ts.ask("", "q")
	ts.waitRun(run, "running")
	queued := ts.ask("", "queued")
	ts.stop()
	eng.search.w.block = ""
	again := startTestServer(t, path, eng, queueOf(1, 4))
	var runs []lgRun
	require.Eventually(t, func() bool {
		runs = lgCall[[]lgRun](again, "GET", "/threads/"+queued.ThreadID+"/runs", nil, 200)
		return len(runs) == 2 && runs[0].Status == "success"
	}, 30*time.Second, 10*time.Millisecond, "the waiting run runs anew")
	assert.Equal(t, "queued", runs[0].question())
	assert.Equal(t, "interrupted", again.waitRun(run, "interrupted").Status)
	lgCall[json.RawMessage](again, "POST", "/threads/"+run.ThreadID+"/runs/wait", map[string]any{"assistant_id": "research", "input": nil}, 200)
	assert.Equal(t, "success", lgCall[[]lgRun](again, "GET", "/threads/"+run.ThreadID+"/runs", nil, 200)[0].Status)
}

func countQuery(s *worldSearch, q string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, x := range s.queries {
		if x == q {
			n++
		}
	}
	return n
}
