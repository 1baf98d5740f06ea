package server

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The browser test: the page of `research serve` in a real headless
// Chromium, driven over the DevTools protocol with chromedp. It asks a
// question against the hostile world of harness_test.go (an answer and
// source titles full of markup that must never run), follows the run live,
// checks what the page shows and that nothing the model wrote became markup,
// script or a dangerous link, takes screenshots, and asks a follow-up on the
// same thread.
//
// Chromium: $DEEPGRAPH_CHROMIUM, /usr/bin/chromium, or chromium,
// chromium-browser or google-chrome on PATH; without one the test skips
// (apt-get install chromium). Screenshots go to $DEEPGRAPH_ARTIFACTS when
// it is set.

// browserTimeout bounds the whole browser session.
const browserTimeout = 60 * time.Second

func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped in -short mode")
	}
	chromium := findChromium(t)
	began := time.Now()

	eng := newEngine(world{callDelay: 40 * time.Millisecond, tokenDelay: 15 * time.Millisecond, searchDelay: 40 * time.Millisecond, hostile: true, queries: 2})
	ts := startTestServer(t, filepath.Join(t.TempDir(), "runs.db"), eng)
	b := startBrowser(t, chromium)
	ctx := b.ctx

	// The page loads: the question box shows, and /info has filled the
	// effort list ("medium (3 queries, 3 loops)").
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(ts.http.URL),
		chromedp.WaitVisible(chromedp.ID("question")),
	))
	b.proveDetectors(t)
	pollJS(t, ctx, `document.querySelector('#effort option[value="medium"]')?.textContent.includes('(')`)
	assert.Equal(t, "idle", evalJS[string](t, ctx, `document.body.dataset.state`))
	assert.Zero(t, evalJS[int](t, ctx, `document.querySelectorAll('#timeline, #answer, #sources').length`),
		"no run is open yet")

	// Ask: effort medium, a question, the Ask button.
	const question = "What do the sources say about the hostile world?"
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("effort"), "medium"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('effort').dispatchEvent(new Event('change', {bubbles: true}))`),
		chromedp.SendKeys(chromedp.ID("question"), question),
		chromedp.Click(chromedp.ID("ask")),
	))

	// While it runs: the answer streams into #answer (data-streaming="true",
	// growing raw text) until the report replaces it. The page itself
	// samples #answer every 20 ms until the run stops.
	stream := watchStream(t, ctx)
	require.Equal(t, "done", stream.State, "the run ended %s; error box: %q", stream.State, evalJS[string](t, ctx, `document.getElementById('error-message').textContent`))

	threadID := evalJS[string](t, ctx, `decodeURIComponent((/^#thread=(.+)$/.exec(location.hash) || ['', ''])[1])`)
	require.NotEmpty(t, threadID, "the page shows the thread in the URL")
	runID := evalJS[string](t, ctx, `document.getElementById('current-run').dataset.runId`)
	run := lgCall[lgRun](ts, "GET", "/threads/"+threadID+"/runs/"+runID, nil, 200)
	require.Equal(t, "success", run.Status)
	assert.Equal(t, question, run.question())
	assert.JSONEq(t, `"medium"`, string(run.Kwargs.Config.Configurable["effort"]), "the effort picked in the page")

	// What streamed: partial text, shorter than the whole streamed answer
	// (read back from the run's event stream).
	streamed := streamedAnswer(t, ts, run)
	require.NotEmpty(t, stream.Lens, "#answer was never seen with data-streaming=\"true\"")
	assert.Greater(t, slices.Min(stream.Lens), 0, "streaming with no text")
	assert.Less(t, slices.Min(stream.Lens), len(streamed), "only the whole answer was ever seen while streaming")
	assert.GreaterOrEqual(t, len(slices.Compact(slices.Clone(stream.Lens))), 2, "the streamed answer grew while watched: %v", stream.Lens)
	assert.LessOrEqual(t, stream.Elements, 1, "the streamed raw answer became markup")
	assert.False(t, stream.Pwned, "injected script ran while the answer streamed")
	t.Logf("streaming: %d samples, %d..%d of %d characters", len(stream.Lens), slices.Min(stream.Lens), slices.Max(stream.Lens), len(streamed))

	// What the page shows of the run: the report, checked against the API.
	sourceURLs := sourcesOf(t, ts, run)
	require.Len(t, sourceURLs, 4, "two sources for each of the two queries")
	f := readPage(t, ctx)
	checkRunPage(t, f, sourceURLs)
	checkTimeline(t, f.Timeline)
	checkNoInjection(t, ctx)

	shot := saveScreenshot(t, ctx, "serve-page.png")

	// A follow-up on the same thread, sent with Enter this time: a second
	// run below the first, which stays on the page with its answer.
	assert.Contains(t, evalJS[string](t, ctx, `document.getElementById('ask-hint').textContent`), "Follow-up on this thread")
	const followUp = "And what does the second source add?"
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("question"), followUp+"\n")))
	pollJS(t, ctx, `document.querySelectorAll('#runs > article.run').length === 2 &&
		document.getElementById('current-run')?.dataset.runId !== `+jsString(runID)+` &&
		['done', 'failed', 'interrupted', 'needs-input'].includes(document.body.dataset.state) &&
		document.getElementById('answer')?.dataset.streaming !== 'true'`)
	assert.Equal(t, "done", evalJS[string](t, ctx, `document.body.dataset.state`))

	// The API agrees: one thread, two runs (newest first).
	runs2 := lgCall[[]lgRun](ts, "GET", "/threads/"+threadID+"/runs", nil, 200)
	require.Len(t, runs2, 2, "the follow-up went on the same thread")
	assert.Equal(t, runID, runs2[1].RunID)
	assert.Equal(t, followUp, runs2[0].question())
	assert.Equal(t, "success", runs2[0].Status)
	assert.Equal(t, runs2[0].RunID, evalJS[string](t, ctx, `document.getElementById('current-run').dataset.runId`))
	assert.Equal(t, 1, evalJS[int](t, ctx, `document.querySelectorAll('#thread-list > li').length`), "still one thread in the list")

	// The page shows both runs, the newest one with the stable ids.
	runs := evalJS[[]pageRun](t, ctx, `[...document.querySelectorAll('#runs > article.run')].map((r) => ({
		question: r.querySelector('.run-question')?.textContent ?? '',
		status: r.querySelector('.run-status')?.textContent ?? '',
		citations: r.querySelectorAll('a.citation').length,
		sources: r.querySelectorAll('a.source-link').length,
	}))`)
	require.Len(t, runs, 2)
	for i, want := range []string{question, followUp} {
		assert.Equal(t, want, runs[i].Question, "run %d", i+1)
		assert.Equal(t, "done", runs[i].Status, "run %d", i+1)
		assert.Positive(t, runs[i].Citations, "run %d keeps its cited answer", i+1)
		assert.Equal(t, 4, runs[i].Sources, "run %d keeps its sources", i+1)
	}
	for _, id := range []string{"answer", "sources", "timeline", "run-status", "current-run"} {
		assert.Equal(t, 1, evalJS[int](t, ctx, `document.querySelectorAll('#`+id+`').length`), "one #%s, on the newest run", id)
	}
	f2 := readPage(t, ctx)
	checkRunPage(t, f2, sourcesOf(t, ts, runs2[0]))
	checkTimeline(t, f2.Timeline)
	checkNoInjection(t, ctx)

	// Reloaded, the page opens the thread from its URL: both turns, from
	// the thread's runs and history, their timelines replayed from the
	// runs' custom events; the list of past runs from threads/search,
	// without the threads of graphs the page does not show (a flow's).
	lgCall[map[string]any](ts, "POST", "/threads", map[string]any{"metadata": map[string]string{"graph_id": "flow"}}, 200)
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("question"))))
	pollJS(t, ctx, `document.querySelectorAll('#runs > article.run').length === 2 && document.body.dataset.state === 'done' &&
		document.querySelectorAll('#timeline > li[data-kind="answered"]').length === 1 && document.querySelectorAll('#thread-list > li').length === 1`)
	reopened := evalJS[[]pageRun](t, ctx, `[...document.querySelectorAll('#runs > article.run')].map((r) => ({
		question: r.querySelector('.run-question')?.textContent ?? '',
		status: r.querySelector('.run-status')?.textContent ?? '',
		citations: r.querySelectorAll('a.citation').length,
		sources: r.querySelectorAll('a.source-link').length,
	}))`)
	assert.Equal(t, runs, reopened, "the reopened thread shows what the page showed")
	assert.Equal(t, question, evalJS[string](t, ctx, `document.querySelector('#thread-list .thread-name').textContent`))
	f3 := readPage(t, ctx)
	checkRunPage(t, f3, sourcesOf(t, ts, runs2[0]))
	checkTimeline(t, f3.Timeline)
	checkNoInjection(t, ctx)

	// For the artifacts, the same page on a phone.
	if os.Getenv("DEEPGRAPH_ARTIFACTS") != "" {
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(375, 800, chromedp.EmulateMobile, chromedp.EmulatePortrait)))
		pollJS(t, ctx, `innerWidth === 375 && getComputedStyle(document.getElementById('sidebar')).position === 'fixed'`)
		saveScreenshot(t, ctx, "serve-page-phone.png")
	}

	// No dialog, console error or CSP violation all along.
	b.checkProblems(t)
	t.Logf("browser test: %s (screenshot %s)", time.Since(began).Round(time.Millisecond), shot)
}

// ---------------------------------------------------------------------------
// Finding and starting Chromium

// findChromium returns the browser to drive, or skips the test.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DEEPGRAPH_CHROMIUM"); p != "" {
		path, err := exec.LookPath(p)
		require.NoError(t, err, "DEEPGRAPH_CHROMIUM=%s is not an executable", p)
		return path
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skip("browser test: no Chromium found (install it with `apt-get install chromium`, " +
		"or point DEEPGRAPH_CHROMIUM at a Chrome or Chromium binary)")
	return ""
}

// browser is a headless Chromium with one tab, and what the tab did that
// fails the test: JavaScript dialogs and console errors (CSP violations
// among them).
type browser struct {
	ctx context.Context

	mu       sync.Mutex
	dialogs  []string
	problems []string
	warnings []string
}

// cspRecorder runs in the page before its own scripts: it keeps every CSP
// violation the document reports (the policy has no report-uri, so this
// event is the report).
const cspRecorder = `window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
	window.__cspViolations.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber);
});`

// startBrowser starts Chromium headless with a fresh profile and opens a
// tab; everything ends when the test does, or after browserTimeout.
func startBrowser(t *testing.T, path string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		// The network is closed: nothing but the test server is reachable.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	timeout, cancelTimeout := context.WithTimeout(context.Background(), browserTimeout)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(timeout, opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	b := &browser{ctx: ctx}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // waits for the browser to exit (before its profile is removed)
		cancelTimeout()
		wg.Wait()
	})
	require.NoError(t, chromedp.Do(ctx), "starting %s", path)

	// Subscribe before the page loads: Console and Events buffer.
	console := chromedp.Console(ctx)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	wg.Go(func() {
		for m, err := range console {
			if err != nil {
				return
			}
			line := m.String()
			if m.URL != "" {
				line += " (" + m.URL + ")"
			}
			b.mu.Lock()
			switch {
			case m.Type == chromedp.ConsoleError || m.IsException() || strings.Contains(m.Text, "Content Security Policy"):
				b.problems = append(b.problems, line)
			case m.Type == chromedp.ConsoleWarning:
				b.warnings = append(b.warnings, line)
			}
			b.mu.Unlock()
		}
	})
	wg.Go(func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, string(ev.Type)+": "+ev.Message)
			b.mu.Unlock()
			// Dismiss it, or the page stays blocked.
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	})
	_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspRecorder})
	require.NoError(t, err)
	return b
}

// proveDetectors makes the page break its CSP once on purpose (an image
// from another origin) and waits until both detectors (the page's
// securitypolicyviolation listener and the console) saw it; then forgets
// it. So a clean run below means "no violation", not "deaf detectors".
func (b *browser) proveDetectors(t *testing.T) {
	t.Helper()
	evalJS[chromedp.Void](t, b.ctx, `(() => { const i = new Image(); i.src = 'https://csp-probe.invalid/probe.png'; })()`)
	pollJS(t, b.ctx, `window.__cspViolations.some((v) => v.includes('csp-probe.invalid'))`)
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return slices.ContainsFunc(b.problems, func(p string) bool { return strings.Contains(p, "csp-probe.invalid") })
	}, 30*time.Second, 10*time.Millisecond, "the console never reported the probe's CSP violation")
	evalJS[chromedp.Void](t, b.ctx, `window.__cspViolations.length = 0`)
	b.mu.Lock()
	b.problems = b.problems[:0]
	b.mu.Unlock()
}

// checkProblems fails the test for any dialog, console error or CSP
// violation seen since proveDetectors.
func (b *browser) checkProblems(t *testing.T) {
	t.Helper()
	violations := evalJS[[]string](t, b.ctx, `window.__cspViolations`)
	b.mu.Lock()
	defer b.mu.Unlock()
	assert.Empty(t, b.dialogs, "the page opened JavaScript dialogs")
	assert.Empty(t, violations, "CSP violations")
	assert.Empty(t, b.problems, "console errors")
	for _, w := range b.warnings {
		t.Logf("console warning: %s", w)
	}
}

// ---------------------------------------------------------------------------
// Reading the page

// evalJS evaluates a JavaScript expression in the page.
func evalJS[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, "evaluating %s", expr)
	return v
}

// pollJS waits until a JavaScript expression is truthy.
func pollJS(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(browserTimeout)))
	require.NoError(t, err, "waiting for %s", expr)
}

func jsString(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}

// streamWatch is what the page saw of #answer while the run ran.
type streamWatch struct {
	// State is body[data-state] once the run stopped.
	State string `json:"state"`
	// Lens are the lengths of #answer's text at each sample taken while it
	// had data-streaming="true".
	Lens []int `json:"lens"`
	// Elements is the most elements seen in #answer while it streamed.
	Elements int `json:"elements"`
	// Pwned: window.__pwned was set at some sample.
	Pwned bool `json:"pwned"`
}

// watchStream samples #answer in the page every 20 ms until the run stops
// (body[data-state] is done, failed, interrupted or needs-input) and the
// answer stopped streaming.
func watchStream(t *testing.T, ctx context.Context) streamWatch {
	t.Helper()
	w, err := chromedp.Run(ctx, chromedp.PollFunction[streamWatch](`() => {
		const w = (window.__streamWatch ||= {state: '', lens: [], elements: 0, pwned: false});
		const a = document.getElementById('answer');
		const streaming = !!a && a.dataset.streaming === 'true';
		if (streaming) {
			w.lens.push(a.textContent.length);
			// The raw stream is text: no element but its one container.
			w.elements = Math.max(w.elements, a.querySelectorAll('*').length);
		}
		if (window.__pwned !== undefined) w.pwned = true;
		w.state = document.body.dataset.state;
		return ['done', 'failed', 'interrupted', 'needs-input'].includes(w.state) && !streaming ? w : false;
	}`, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(browserTimeout)))
	require.NoError(t, err, "waiting for the run to end in the page")
	return w
}

// streamedAnswer is the answer as its chunks streamed, read back from the
// run's stream (its messages-tuple events).
func streamedAnswer(t *testing.T, ts *testServer, run lgRun) string {
	t.Helper()
	var sb strings.Builder
	for _, ev := range ts.lgJoin(run, "messages") {
		var tuple []json.RawMessage
		require.NoError(t, json.Unmarshal(ev.Data, &tuple))
		var chunk struct{ Type, Content string }
		require.NoError(t, json.Unmarshal(tuple[0], &chunk))
		if chunk.Type == "ai" && chunk.Content == "" {
			sb.Reset() // written again
		}
		sb.WriteString(chunk.Content)
	}
	return sb.String()
}

// sourcesOf returns the source URLs of a run's answer: of the values its
// last checkpoint holds.
func sourcesOf(t *testing.T, ts *testServer, r lgRun) []string {
	t.Helper()
	var urls []string
	for _, s := range ts.lgRunValues(r).Sources {
		urls = append(urls, s.URL)
	}
	return urls
}

// pageRun is one run's view as the page shows it.
type pageRun struct {
	Question  string `json:"question"`
	Status    string `json:"status"`
	Citations int    `json:"citations"`
	Sources   int    `json:"sources"`
}

// timelineEntry is one li of #timeline.
type timelineEntry struct {
	Kind   string `json:"kind"`
	Title  string `json:"title"`
	Time   string `json:"time"`
	Tokens string `json:"tokens"`
	// TokensSoFar is the exact count, from the title of the tokens.
	TokensSoFar string `json:"tokensSoFar"`
	Done        bool   `json:"done"`
}

// pageFacts is what the open (newest) run shows.
type pageFacts struct {
	State        string          `json:"state"`
	RunStatus    string          `json:"runStatus"`
	ErrorShown   bool            `json:"errorShown"`
	ErrorText    string          `json:"errorText"`
	Timeline     []timelineEntry `json:"timeline"`
	Streaming    bool            `json:"streaming"`
	AnswerText   string          `json:"answerText"`
	Headings     []string        `json:"headings"`
	Strong       []string        `json:"strong"`
	ListItems    []string        `json:"listItems"`
	Citations    []string        `json:"citations"`
	SourceLinks  []string        `json:"sourceLinks"`
	SourceItems  int             `json:"sourceItems"`
	BlankWithout []string        `json:"blankWithout"`
}

const readPageJS = `(() => {
	const q = (sel) => document.querySelector(sel);
	const all = (sel, root = document) => [...root.querySelectorAll(sel)];
	const answer = q('#answer'), sources = q('#sources'), timeline = q('#timeline');
	return {
		state: document.body.dataset.state,
		runStatus: q('#run-status')?.textContent ?? '',
		errorShown: !q('#error-box').hidden,
		errorText: q('#error-message').textContent,
		timeline: timeline ? all(':scope > li', timeline).map((li) => ({
			kind: li.dataset.kind,
			title: li.querySelector('.tl-title')?.textContent ?? '',
			time: li.querySelector('.tl-time')?.textContent ?? '',
			tokens: li.querySelector('.tl-tokens')?.textContent ?? '',
			tokensSoFar: li.querySelector('.tl-tokens')?.title ?? '',
			done: li.classList.contains('done'),
		})) : [],
		streaming: !!answer && answer.hasAttribute('data-streaming'),
		answerText: answer?.textContent ?? '',
		headings: answer ? all('h1, h2, h3, h4, h5, h6', answer).map((h) => h.textContent) : [],
		strong: answer ? all('strong', answer).map((s) => s.textContent) : [],
		listItems: answer ? all('li', answer).map((li) => li.textContent) : [],
		citations: answer ? all('a.citation', answer).map((a) => a.href) : [],
		sourceLinks: sources ? all(':scope > li a.source-link', sources).map((a) => a.href) : [],
		sourceItems: sources ? all(':scope > li', sources).length : 0,
		blankWithout: all('a[target="_blank"]').filter((a) => !/\bnoopener\b/.test(a.rel) || !/\bnoreferrer\b/.test(a.rel)).map((a) => a.outerHTML),
	};
})()`

func readPage(t *testing.T, ctx context.Context) pageFacts {
	t.Helper()
	return evalJS[pageFacts](t, ctx, readPageJS)
}

// checkRunPage checks the open run's status, answer and sources.
func checkRunPage(t *testing.T, f pageFacts, sourceURLs []string) {
	t.Helper()
	assert.Equal(t, "done", f.State, "body[data-state]")
	assert.Equal(t, "done", f.RunStatus, "#run-status")
	assert.False(t, f.ErrorShown, "#error-box shows %q", f.ErrorText)

	// The answer is rendered Markdown, no longer the raw stream.
	assert.False(t, f.Streaming, "#answer still has data-streaming")
	assert.Contains(t, f.Headings, "Findings", "the answer's ## heading")
	assert.Contains(t, f.Strong, "clear", "the answer's **bold**")
	assert.Contains(t, f.ListItems, "first point")
	assert.Contains(t, f.ListItems, "second point")
	assert.NotContains(t, f.AnswerText, "## Findings", "Markdown left raw")
	assert.NotContains(t, f.AnswerText, "vertexaisearch", "citation markers left unresolved")
	require.NotEmpty(t, f.Citations, "no a.citation in #answer")
	for _, c := range f.Citations {
		assert.Contains(t, sourceURLs, c, "a citation to a URL that is no source")
	}

	// The sources: one li each, linked to their https URL.
	assert.Equal(t, len(sourceURLs), f.SourceItems, "li in #sources")
	assert.ElementsMatch(t, sourceURLs, f.SourceLinks, "a.source-link in #sources")
	for _, l := range f.SourceLinks {
		assert.True(t, strings.HasPrefix(l, "https://"), "source link %s", l)
	}
	assert.Empty(t, f.BlankWithout, `target="_blank" links without rel="noopener noreferrer"`)
}

var (
	elapsedRe = regexp.MustCompile(`^(\d+\.\d s|\d+ min \d+ s)$`)
	tokensRe  = regexp.MustCompile(`^\d+(\.\d[kM])? tok$`)
	soFarRe   = regexp.MustCompile(`^(\d+) tokens so far$`)
)

// checkTimeline checks the research steps of a run with two queries and
// one sufficient reflection, each with its elapsed time and tokens.
func checkTimeline(t *testing.T, tl []timelineEntry) {
	t.Helper()
	var kinds []string
	for _, e := range tl {
		kinds = append(kinds, e.Kind)
	}
	count := func(kind string) int {
		n := 0
		for _, k := range kinds {
			if k == kind {
				n++
			}
		}
		return n
	}
	for _, k := range []string{"generating_queries", "queries", "reflected", "finalizing", "answered"} {
		assert.Equal(t, 1, count(k), "timeline entries %q in %v", k, kinds)
	}
	assert.Equal(t, 2, count("searching"), "one search per query: %v", kinds)
	assert.Equal(t, 2, count("searched"), "one search per query: %v", kinds)
	// The steps in their order (searches may finish in any order).
	order := []string{"generating_queries", "queries", "searched", "reflected", "finalizing", "answered"}
	last := -1
	for _, k := range order {
		i := slices.Index(kinds, k)
		assert.Greater(t, i, last, "%q out of order in %v", k, kinds)
		last = i
	}
	var searched []string
	prevTokens := -1
	for _, e := range tl {
		assert.Regexp(t, elapsedRe, e.Time, "elapsed time of the %s entry", e.Kind)
		assert.Regexp(t, tokensRe, e.Tokens, "tokens of the %s entry", e.Kind)
		if m := soFarRe.FindStringSubmatch(e.TokensSoFar); assert.NotNil(t, m, "tokens title %q", e.TokensSoFar) {
			n, _ := strconv.Atoi(m[1])
			assert.GreaterOrEqual(t, n, prevTokens, "tokens so far went down at the %s entry", e.Kind)
			prevTokens = n
		}
		switch e.Kind {
		case "searched":
			searched = append(searched, e.Title)
		case "searching":
			assert.True(t, e.Done, "a searching entry still busy after its search: %s", e.Title)
		case "reflected":
			assert.Equal(t, "Reflection 1: sufficient", e.Title)
		}
	}
	assert.ElementsMatch(t, []string{"Searched “query 1”", "Searched “query 2”"}, searched)
	assert.Positive(t, prevTokens, "no tokens counted")
}

// checkNoInjection checks that nothing the hostile model and search wrote
// ran, became markup, or became a link that is not http(s) — and that the
// markup is still there, as text.
func checkNoInjection(t *testing.T, ctx context.Context) {
	t.Helper()
	assert.Equal(t, "undefined", evalJS[string](t, ctx, `typeof window.__pwned`), "injected script ran")
	bad := evalJS[[]string](t, ctx, `(() => {
		const bad = [];
		const tag = (e) => '<' + e.tagName.toLowerCase() + '>';
		for (const sel of ['#answer', '#sources', '#timeline']) {
			const root = document.querySelector(sel);
			if (!root) { bad.push('no ' + sel); continue; }
			for (const e of root.querySelectorAll('script, img, iframe, frame, object, embed, svg, math, style, link, meta, base, form, input, video, audio, source'))
				bad.push(sel + ' holds ' + tag(e));
		}
		for (const e of document.querySelectorAll('*'))
			for (const a of e.attributes)
				if (/^on/i.test(a.name) || a.name === 'srcdoc') bad.push(tag(e) + ' with ' + a.name + '=' + JSON.stringify(a.value));
		for (const e of document.querySelectorAll('img, iframe, frame, object, embed'))
			bad.push('the page holds ' + tag(e));
		for (const s of document.querySelectorAll('script'))
			if (s.getAttribute('src') !== '/assets/app.js' || s.textContent.trim() !== '') bad.push('script ' + s.outerHTML.slice(0, 200));
		for (const a of document.querySelectorAll('a[href], area[href]')) {
			const raw = a.getAttribute('href');
			if (raw.startsWith('#')) continue;
			let proto = '';
			try { proto = new URL(a.href, location.href).protocol; } catch {}
			if (proto !== 'http:' && proto !== 'https:') bad.push('link to ' + raw);
		}
		return bad;
	})()`)
	assert.Empty(t, bad, "injected markup or links")

	// The injected HTML shows as text. (The Markdown links to javascript:
	// and data: URLs and the Markdown image never reach the report: the
	// server's citation pass drops links that are no citations.)
	answer := evalJS[string](t, ctx, `document.getElementById('answer').textContent`)
	for _, s := range []string{"<script>window.__pwned=1</script>", `<img src=x onerror="window.__pwned=2">`, `<a href="javascript:window.__pwned=5">raw link</a>`} {
		assert.Contains(t, answer, s, "#answer shows the injected HTML as text")
	}
	sources := evalJS[string](t, ctx, `document.getElementById('sources').textContent`)
	assert.Contains(t, sources, `<img src=x onerror="window.__pwned=6">`, "#sources shows the hostile title as text")
}

// saveScreenshot saves a full-page PNG of the page to $DEEPGRAPH_ARTIFACTS
// (created when needed) or to a temporary directory, and returns its path.
func saveScreenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	dir := os.Getenv("DEEPGRAPH_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	// From the top of the page (sticky bars in place), once no CSS
	// transition runs (the drawer slides away when the viewport narrows).
	evalJS[chromedp.Void](t, ctx, `window.scrollTo({top: 0, behavior: 'instant'})`)
	pollJS(t, ctx, `scrollY === 0 && !document.getAnimations().some((a) => a instanceof CSSTransition && a.playState === 'running')`)
	// Quality 100 is what makes chromedp capture a PNG (below it, JPEG).
	img, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(img, []byte("\x89PNG\r\n\x1a\n")), "the screenshot is not a PNG")
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, img, 0o644))
	t.Logf("screenshot: %s (%d bytes)", path, len(img))
	return path
}
