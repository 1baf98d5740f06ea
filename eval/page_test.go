package eval_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/eval"
)

// chromium finds a Chromium to run, or skips.
func chromium(t *testing.T) string {
	t.Helper()
	for _, v := range []string{"DEEPGRAPH_CHROMIUM", "DEEPGRAPH_BROWSER_CHROMIUM"} {
		if p := os.Getenv(v); p != "" {
			return p
		}
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on PATH (chromium, chromium-browser, google-chrome) and DEEPGRAPH_CHROMIUM unset: the page test needs one")
	return ""
}

// TestPageInChromium opens the eval's page in headless Chromium: no
// console error, the table, the plot and a drill-down that opens; its
// screenshot goes to $DEEPGRAPH_ARTIFACTS (else the test's temporary
// directory).
func TestPageInChromium(t *testing.T) {
	t.Parallel()
	exe := chromium(t)
	qs, cfgs, _, _, judge := evalSetup(t)
	res, err := eval.Run(context.Background(), qs, cfgs, eval.Options{Judge: judge, Repeat: 2})
	require.NoError(t, err)
	res.Set = "questions.jsonl"
	dir := t.TempDir()
	require.NoError(t, eval.WriteFiles(dir, res))

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1200, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx), "starting Chromium")
	// The console's messages, until the page logs the end marker.
	const endMarker = "eval-page-test-done"
	var problems []string
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil || m.Text == endMarker {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				problems = append(problems, m.String())
			}
		}
	}()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate("file://"+filepath.Join(dir, eval.PageFile)),
		chromedp.WaitVisible("#configs"),
		chromedp.Click("details.question > summary", chromedp.NodeVisible),
		chromedp.Click("details.question details.case > summary", chromedp.NodeVisible),
	))
	count := func(sel string) int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(sel)+`).length`))
		require.NoError(t, err, sel)
		return n
	}
	rows, points, opened := count("#configs tbody tr"), count("#scatter circle"), count("details[open] blockquote")
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	_, err = chromedp.Run(ctx, chromedp.Evaluate[any](`console.log("`+endMarker+`")`))
	require.NoError(t, err)
	assert.Greater(t, rows, 10)
	assert.Equal(t, 2, points, "a point per configuration")
	assert.Positive(t, opened, "the drill-down shows the passages")
	<-done
	assert.Empty(t, problems, "console errors")
	out := os.Getenv("DEEPGRAPH_ARTIFACTS")
	if out == "" {
		out = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(out, 0o755))
	path := filepath.Join(out, "eval-page.png")
	require.NoError(t, os.WriteFile(path, shot, 0o644))
	require.True(t, strings.HasPrefix(string(shot), "\x89PNG"), "a PNG")
	t.Logf("screenshot: %s", path)
}
