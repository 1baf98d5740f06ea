package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cutStream is a middleware that breaks the connection of the first run
// stream the page opens (POST …/runs/stream) once two custom events went
// through, and records the Last-Event-ID of the streams joined after.
type cutStream struct {
	mu     sync.Mutex
	cut    bool
	joined []string // Last-Event-ID of each GET …/runs/{id}/stream with one
}

func (c *cutStream) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/stream") && r.Header.Get("Last-Event-ID") != "" {
			c.mu.Lock()
			c.joined = append(c.joined, r.Header.Get("Last-Event-ID"))
			c.mu.Unlock()
		}
		c.mu.Lock()
		first := r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/runs/stream") && !c.cut
		c.cut = c.cut || first
		c.mu.Unlock()
		if first {
			w = &cuttingWriter{ResponseWriter: w}
		}
		next.ServeHTTP(w, r)
	})
}

// cuttingWriter aborts its response at the third custom event: the
// connection breaks as a dropped network would break it.
type cuttingWriter struct {
	http.ResponseWriter
	customs int
}

func (w *cuttingWriter) Write(p []byte) (int, error) {
	w.customs += bytes.Count(p, []byte("event: custom\n"))
	if w.customs >= 3 {
		panic(http.ErrAbortHandler)
	}
	return w.ResponseWriter.Write(p)
}

func (w *cuttingWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

// TestBrowserReconnect: the page's run stream breaks mid-run; the page
// joins the run again at the stream's Location with Last-Event-ID, and
// shows the whole run once: each timeline entry once, the cited answer.
func TestBrowserReconnect(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped in -short mode")
	}
	chromium := findChromium(t)
	cut := &cutStream{}
	eng := newEngine(world{callDelay: 40 * time.Millisecond, tokenDelay: 15 * time.Millisecond, searchDelay: 40 * time.Millisecond, queries: 2})
	ts := startWrappedServer(t, filepath.Join(t.TempDir(), "runs.db"), eng, cut.wrap)
	b := startBrowser(t, chromium)
	ctx := b.ctx
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(ts.http.URL),
		chromedp.WaitVisible(chromedp.ID("question")),
	))
	// Medium effort: two queries in this world (the timeline checkTimeline reads).
	pollJS(t, ctx, `document.querySelector('#effort option[value="medium"]')?.textContent.includes('(')`)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("effort"), "medium"),
		chromedp.SendKeys(chromedp.ID("question"), "What do the sources say?"),
		chromedp.Click(chromedp.ID("ask")),
	))
	pollJS(t, ctx, `['done', 'failed', 'interrupted', 'needs-input'].includes(document.body.dataset.state) && document.getElementById('answer')?.dataset.streaming !== 'true'`)
	f := readPage(t, ctx)
	assert.Equal(t, "done", f.State, "error box: %q", f.ErrorText)

	cut.mu.Lock()
	joined := append([]string(nil), cut.joined...)
	cut.mu.Unlock()
	require.NotEmpty(t, joined, "the page never joined the run's stream again with Last-Event-ID")
	n, err := strconv.Atoi(joined[0])
	require.NoError(t, err)
	assert.Positive(t, n, "Last-Event-ID is the last event the page had")

	threadID := evalJS[string](t, ctx, `decodeURIComponent((/^#thread=(.+)$/.exec(location.hash) || ['', ''])[1])`)
	runID := evalJS[string](t, ctx, `document.getElementById('current-run').dataset.runId`)
	checkRunPage(t, f, sourcesOf(t, ts, lgRun{RunID: runID, ThreadID: threadID}))
	checkTimeline(t, f.Timeline) // each step once: nothing replayed twice, nothing lost
}

// TestBrowserCancel: Cancel stops a running run (POST …/runs/{id}/cancel);
// the page shows it cancelled, raises no error, and offers Resume: a run
// with input null that continues the thread's unfinished tasks, streamed
// into the same turn, which finishes with the cited answer; the searches
// that had finished before the cancel are not made again.
func TestBrowserCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped in -short mode")
	}
	chromium := findChromium(t)
	ts := startTestServer(t, filepath.Join(t.TempDir(), "runs.db"), newEngine(world{block: "query 1"}))
	b := startBrowser(t, chromium)
	ctx := b.ctx
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(ts.http.URL), chromedp.WaitVisible(chromedp.ID("question"))))
	b.proveDetectors(t)
	// Medium effort: two queries, searched side by side; query 1 never
	// returns (until unblocked), query 2 does.
	pollJS(t, ctx, `document.querySelector('#effort option[value="medium"]')?.textContent.includes('(')`)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("effort"), "medium"),
		chromedp.SendKeys(chromedp.ID("question"), "A question whose search never ends"),
		chromedp.Click(chromedp.ID("ask")),
	))
	// Running, its search under way, query 2's search finished and recorded
	// in the pending step: Cancel.
	pollJS(t, ctx, `document.body.dataset.state === 'running' && document.querySelector('#timeline li[data-kind="searching"]') && !document.getElementById('run-cancel').hidden`)
	threadID := evalJS[string](t, ctx, `decodeURIComponent((/^#thread=(.+)$/.exec(location.hash) || ['', ''])[1])`)
	for i := 0; ; i++ {
		st := lgCall[struct {
			Tasks []struct {
				Name   string          `json:"name"`
				Result json.RawMessage `json:"result"`
			} `json:"tasks"`
		}](ts, "GET", "/threads/"+threadID+"/state", nil, 200)
		done := 0
		for _, task := range st.Tasks {
			if len(task.Result) > 0 && string(task.Result) != "null" {
				done++
			}
		}
		if done > 0 && len(st.Tasks) > done {
			break
		}
		require.Less(t, i, 2000, "query 2's search never finished beside the blocked query 1: %+v", st.Tasks)
		time.Sleep(5 * time.Millisecond) // polls the run's state
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("run-cancel"))))
	pollJS(t, ctx, `document.body.dataset.state === 'interrupted'`)
	assert.Equal(t, "interrupted", evalJS[string](t, ctx, `document.getElementById('run-status').textContent`))
	assert.Equal(t, "The run was cancelled. Resume it to go on.", evalJS[string](t, ctx, `document.getElementById('answer-status').textContent`))
	assert.True(t, evalJS[bool](t, ctx, `document.getElementById('error-box').hidden`), "a cancel is no error")
	assert.True(t, evalJS[bool](t, ctx, `document.querySelector('#current-run .run-error').hidden`), "nor an error of the run")
	assert.True(t, evalJS[bool](t, ctx, `document.getElementById('run-cancel').hidden`))

	runID := evalJS[string](t, ctx, `document.getElementById('current-run').dataset.runId`)
	assert.Equal(t, "interrupted", lgCall[lgRun](ts, "GET", "/threads/"+threadID+"/runs/"+runID, nil, 200).Status)

	// The cancelled run left its searches pending: Resume continues them.
	require.False(t, evalJS[bool](t, ctx, `document.getElementById('run-resume').hidden`), "no Resume button for a cancelled run with work left")
	pending := lgCall[struct {
		Next []string `json:"next"`
	}](ts, "GET", "/threads/"+threadID+"/state", nil, 200)
	require.NotEmpty(t, pending.Next, "the cancelled run's thread has pending tasks")
	ts.eng.search.mu.Lock()
	searchedBefore := slices.Clone(ts.eng.search.queries)
	ts.eng.search.mu.Unlock()
	require.ElementsMatch(t, []string{"query 1", "query 2"}, searchedBefore)
	ts.eng.search.unblocked.Store(true)
	entriesBefore := evalJS[int](t, ctx, `document.querySelectorAll('#timeline > li').length`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("run-resume"))))
	pollJS(t, ctx, `['done', 'failed', 'needs-input'].includes(document.body.dataset.state) && document.getElementById('answer')?.dataset.streaming !== 'true'`)
	f := readPage(t, ctx)
	assert.Equal(t, "done", f.State, "error box: %q", f.ErrorText)
	assert.True(t, evalJS[bool](t, ctx, `document.getElementById('run-resume').hidden`), "Resume is gone once the run finished")
	assert.Equal(t, 1, evalJS[int](t, ctx, `document.querySelectorAll('#runs > article.run').length`), "the resumed run is the same turn")
	assert.Greater(t, len(f.Timeline), entriesBefore, "the resumed run's activity adds to the turn's timeline")

	// The resuming run: input null, on the same thread, finished.
	runs := lgCall[[]lgRun](ts, "GET", "/threads/"+threadID+"/runs", nil, 200)
	require.Len(t, runs, 2)
	resumed := runs[0] // newest first
	assert.Equal(t, "success", resumed.Status)
	assert.Nil(t, resumed.Kwargs.Input, "Resume sends input null")
	assert.Nil(t, resumed.Kwargs.Command, "and no command")
	checkRunPage(t, f, sourcesOf(t, ts, resumed))
	// Only the unfinished work ran again: query 1's search, not query 2's,
	// which had finished before the cancel.
	ts.eng.search.mu.Lock()
	searchedAfter := slices.Clone(ts.eng.search.queries[len(searchedBefore):])
	ts.eng.search.mu.Unlock()
	assert.Equal(t, []string{"query 1"}, searchedAfter, "the searches of the resumed run")

	// Reopened, the thread shows one turn, done, with the cited answer, and
	// no Resume.
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload()))
	pollJS(t, ctx, `document.body.dataset.state === 'done' && document.querySelectorAll('#answer a.citation').length > 0`)
	assert.Equal(t, 1, evalJS[int](t, ctx, `document.querySelectorAll('#runs > article.run').length`), "the cancelled run and its resume are one turn")
	assert.True(t, evalJS[bool](t, ctx, `document.getElementById('run-resume').hidden`))
	checkRunPage(t, readPage(t, ctx), sourcesOf(t, ts, resumed))
	b.checkProblems(t)
}
