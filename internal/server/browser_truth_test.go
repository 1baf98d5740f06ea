package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
)

// The page tells the truth about a run, in a real Chromium: the server's
// version as it is ("test", not "vtest"); a review pause as a question in
// view under the run's status, with the focus on it and no error shown; the
// cost of the run (its runs' custom cost events); the report copied as
// Markdown and downloaded as Markdown and JSON, byte for byte the thread's
// values; and an agent's steps with the tokens
// they spent.
func TestBrowserTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped in -short mode")
	}
	chromium := findChromium(t)
	eng := newEngine(world{callDelay: 20 * time.Millisecond, queries: 2})
	eng.prices = worldPrices
	eng.agentScript = fake.New(
		fake.ToolCalls(fake.ToolCall("ask_human", map[string]string{"question": "Which year?"})).WithTokens(1000, 100),
		fake.ToolCalls(fake.ToolCall("terminate", map[string]string{"status": "success", "answer": "Done."})).WithTokens(2000, 100).When(fake.AnyContains("2024")),
	)
	ts := startTestServer(t, filepath.Join(t.TempDir(), "runs.db"), eng)
	b := startBrowser(t, chromium)
	ctx := b.ctx
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(ts.http.URL), chromedp.WaitVisible(chromedp.ID("question"))))
	b.proveDetectors(t)

	// The version as the server reports it, then the models.
	pollJS(t, ctx, `document.getElementById('server-info').textContent !== ''`)
	assert.Equal(t, "test · fake:world", evalJS[string](t, ctx, `document.getElementById('server-info').textContent`))

	// A run that pauses for a review of its queries.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("review-mode")),
		chromedp.SendKeys(chromedp.ID("question"), "How do vector clocks work?"),
		chromedp.Click(chromedp.ID("ask")),
	))
	pollJS(t, ctx, `document.body.dataset.state === 'needs-input' && !document.getElementById('review').hidden`)
	type cardFacts struct {
		InRun, AboveAnswer, InView, Focused, ErrorBox, RunError bool
		Badge, Status                                           string
	}
	card := evalJS[cardFacts](t, ctx, `(() => {
		const card = document.getElementById('review'), run = document.getElementById('current-run');
		const r = card.getBoundingClientRect();
		return {
			InRun: card.closest('article.run') === run,
			AboveAnswer: !!(card.compareDocumentPosition(document.getElementById('answer')) & Node.DOCUMENT_POSITION_FOLLOWING),
			InView: r.top >= 0 && r.bottom <= innerHeight,
			Focused: document.activeElement === document.getElementById('review-approve'),
			ErrorBox: !document.getElementById('error-box').hidden,
			RunError: !run.querySelector('.run-error').hidden,
			Badge: getComputedStyle(document.getElementById('run-status')).color,
			Status: document.getElementById('answer-status').textContent,
		};
	})()`)
	assert.True(t, card.InRun, "the review card is in the run's view")
	assert.True(t, card.AboveAnswer, "the review card comes before the answer")
	assert.True(t, card.InView, "the review card is in view")
	assert.True(t, card.Focused, "the focus is on “Search these”")
	assert.False(t, card.ErrorBox, "a pause raises no error")
	assert.False(t, card.RunError, "a pause shows no error in the run")
	assert.Equal(t, "Waiting for your review of the search queries (below).", card.Status)
	if os.Getenv("DEEPGRAPH_ARTIFACTS") != "" {
		saveScreenshot(t, ctx, "serve-review.png")
	}

	// Approved: the run finishes with its cost, its report to take away.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("review-approve"))))
	pollJS(t, ctx, `document.body.dataset.state === 'done' && !document.getElementById('report-actions').hidden`)
	runID := evalJS[string](t, ctx, `document.getElementById('current-run').dataset.runId`)
	threadID := evalJS[string](t, ctx, `decodeURIComponent((/^#thread=(.+)$/.exec(location.hash) || ['', ''])[1])`)
	// The turn: the run that asked, then the one that answered the review.
	runs := lgCall[[]lgRun](ts, "GET", "/threads/"+threadID+"/runs", nil, 200)
	require.Len(t, runs, 2)
	slices.Reverse(runs)
	require.Equal(t, runID, runs[0].RunID)
	require.NotNil(t, runs[1].Kwargs.Command, "the review was answered with command.resume")
	assert.JSONEq(t, `{"decisions":[{"type":"approve"}]}`, string(runs[1].Kwargs.Command.Resume))
	require.Equal(t, "success", runs[1].Status)
	_, _, cost := ts.lgCosts(runs...)
	require.NotNil(t, cost)
	state := lgCall[struct {
		Values json.RawMessage `json:"values"`
	}](ts, "GET", "/threads/"+threadID+"/state", nil, 200)
	var doc struct {
		Markdown string            `json:"markdown"`
		Sources  []json.RawMessage `json:"sources"`
	}
	require.NoError(t, json.Unmarshal(state.Values, &doc))
	// The summary, once the page has read the run's end: its duration
	// (start to end, the review included), cost and sources.
	durationMS := runs[1].UpdatedAt.UnixMilli() - runs[0].CreatedAt.UnixMilli()
	want := fmt.Sprintf("%.1f s · %s · %d sources cited", float64(durationMS)/1000, llm.USD(*cost), len(doc.Sources))
	pollJS(t, ctx, `document.getElementById('run-summary').textContent.includes(`+jsString(want)+`)`)
	require.NotEmpty(t, doc.Markdown)

	// Copy and downloads, caught on their way out of the page.
	evalJS[chromedp.Void](t, ctx, `(() => {
		window.__copied = null;
		navigator.clipboard.writeText = async (text) => { window.__copied = text; };
		window.__saved = [];
		const blobs = new Map();
		const create = URL.createObjectURL.bind(URL);
		URL.createObjectURL = (blob) => { const u = create(blob); blobs.set(u, blob); return u; };
		HTMLAnchorElement.prototype.click = function () {
			const blob = blobs.get(this.href);
			if (blob) blob.text().then((text) => window.__saved.push({name: this.download, type: blob.type, text}));
		};
	})()`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("report-copy"))))
	pollJS(t, ctx, `window.__copied !== null`)
	assert.Equal(t, strings.TrimSpace(doc.Markdown)+"\n", evalJS[string](t, ctx, `window.__copied`), "copied as Markdown")
	assert.Equal(t, "Copied.", evalJS[string](t, ctx, `document.getElementById('report-action-status').textContent`))

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("report-download-md")), chromedp.Click(chromedp.ID("report-download-json"))))
	pollJS(t, ctx, `window.__saved.length === 2`)
	type saved struct{ Name, Type, Text string }
	files := evalJS[[]saved](t, ctx, `window.__saved.sort((a, b) => a.name.localeCompare(b.name))`)
	require.Len(t, files, 2)
	assert.Equal(t, "research-"+runID+".json", files[0].Name)
	assert.Equal(t, "application/json", files[0].Type)
	assert.JSONEq(t, string(state.Values), files[0].Text, "the JSON download is the thread's values")
	assert.Equal(t, "research-"+runID+".md", files[1].Name)
	assert.Equal(t, strings.TrimSpace(doc.Markdown)+"\n", files[1].Text)

	// An agent run that asks a question: the question is a card in its
	// view, in focus; its steps count the tokens they spent.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("new-thread")),
		chromedp.Click(chromedp.ID("kind-agent")),
		chromedp.SendKeys(chromedp.ID("question"), "Finish the task"),
		chromedp.Click(chromedp.ID("ask")),
	))
	pollJS(t, ctx, `document.body.dataset.state === 'needs-input' && !document.getElementById('agent-question').hidden`)
	assert.True(t, evalJS[bool](t, ctx, `document.getElementById('agent-question').closest('article.run') === document.getElementById('current-run') &&
		document.activeElement === document.getElementById('agent-answer') && document.getElementById('error-box').hidden`),
		"the agent's question is in the run's view, in focus, and no error")
	assert.Equal(t, "Which year?", evalJS[string](t, ctx, `document.getElementById('agent-question-text').textContent`))
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("agent-answer"), "2024\n")))
	pollJS(t, ctx, `document.body.dataset.state === 'done' && document.querySelector('#timeline li[data-kind="agent_done"]')`)
	tokens := evalJS[[]string](t, ctx, `[...document.querySelectorAll('#timeline > li')].map((li) => li.dataset.kind + ' ' + li.querySelector('.tl-tokens').textContent)`)
	assert.Equal(t, []string{"agent_think 1.1k tok", "agent_act 1.1k tok", "agent_think 3.2k tok", "agent_act 3.2k tok", "agent_done 3.2k tok"}, tokens)
	assert.Contains(t, evalJS[string](t, ctx, `document.getElementById('run-summary').textContent`), "$", "an agent run shows its cost too")

	b.checkProblems(t)
}
