package server

import (
	"bytes"
	"net/http"
	"path/filepath"
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
// the page shows it cancelled, raises no error, and takes a new question.
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
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("question"), "A question whose search never ends"),
		chromedp.Click(chromedp.ID("ask")),
	))
	// Running, its search under way: Cancel.
	pollJS(t, ctx, `document.body.dataset.state === 'running' && document.querySelector('#timeline li[data-kind="searching"]') && !document.getElementById('run-cancel').hidden`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("run-cancel"))))
	pollJS(t, ctx, `document.body.dataset.state === 'interrupted'`)
	assert.Equal(t, "interrupted", evalJS[string](t, ctx, `document.getElementById('run-status').textContent`))
	assert.Equal(t, "The run was cancelled.", evalJS[string](t, ctx, `document.getElementById('answer-status').textContent`))
	assert.True(t, evalJS[bool](t, ctx, `document.getElementById('error-box').hidden`), "a cancel is no error")
	assert.True(t, evalJS[bool](t, ctx, `document.querySelector('#current-run .run-error').hidden`), "nor an error of the run")
	assert.True(t, evalJS[bool](t, ctx, `document.getElementById('run-cancel').hidden`))

	threadID := evalJS[string](t, ctx, `decodeURIComponent((/^#thread=(.+)$/.exec(location.hash) || ['', ''])[1])`)
	runID := evalJS[string](t, ctx, `document.getElementById('current-run').dataset.runId`)
	assert.Equal(t, "interrupted", lgCall[lgRun](ts, "GET", "/threads/"+threadID+"/runs/"+runID, nil, 200).Status)
	b.checkProblems(t)
}
