package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var servingRe = regexp.MustCompile(`Serving (http://127\.0\.0\.1:\d+)`)

// research serve, end to end: the binary serves the page and the API; a
// question asked over HTTP is researched against the fake Gemini; SIGTERM
// drains — the run in flight is recorded as interrupted — and the next
// serve --resume-interrupted finishes it.
func TestE2EServe(t *testing.T) {
	t.Parallel()
	g := newFakeGemini(t)
	hang := g.hangOn("Euro 2024 Torschützenkönig")
	envv := geminiEnv(t, g, nil)
	s := startBin(t, envv, "serve", "--addr", "127.0.0.1:0")
	s.waitStderr(t, "Serving http://", 20*time.Second)
	base := servingRe.FindStringSubmatch(s.stderr.String())[1]

	page := httpDo(t, "GET", base+"/", "")
	assert.Contains(t, page, `<script type="module" src="/assets/app.js">`)
	var thread struct {
		ID string `json:"thread_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(httpDo(t, "POST", base+"/threads", "{}")), &thread))
	var run struct {
		ID     string `json:"run_id"`
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(httpDo(t, "POST", base+"/threads/"+thread.ID+"/runs",
		`{"input":"Wer gewann die Euro 2024 und wer schoss die meisten Tore?","effort":"medium"}`)), &run))
	runURL := base + "/threads/" + thread.ID + "/runs/" + run.ID
	require.Eventually(t, func() bool { return g.count() >= 3 }, 20*time.Second, 10*time.Millisecond, "the queries and the first search ran")
	time.Sleep(300 * time.Millisecond)

	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	res := s.wait(t, 30*time.Second)
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stderr, "Stopping: running runs store what they finished")
	assert.Contains(t, res.stderr, "Stopped")

	hang.Store(false)
	s2 := startBin(t, envv, "serve", "--addr", "127.0.0.1:0", "--resume-interrupted")
	s2.waitStderr(t, "Serving http://", 20*time.Second)
	base2 := servingRe.FindStringSubmatch(s2.stderr.String())[1]
	runURL = strings.Replace(runURL, base, base2, 1)
	var done struct {
		Status string `json:"status"`
		Report struct {
			Answer  string `json:"answer"`
			Sources []any  `json:"sources"`
		} `json:"report"`
	}
	require.Eventually(t, func() bool {
		require.NoError(t, json.Unmarshal([]byte(httpDo(t, "GET", runURL, "")), &done))
		return done.Status == "done"
	}, 30*time.Second, 20*time.Millisecond)
	assert.Contains(t, done.Report.Answer, "Spanien gewann die Euro 2024")
	assert.NotEmpty(t, done.Report.Sources)
	stream := httpDo(t, "GET", runURL+"/stream", "")
	assert.Equal(t, 1, strings.Count(stream, "event: end\ndata: {\"status\":\"interrupted\"}"), "the stream shows the stop")
	assert.True(t, strings.HasSuffix(stream, "event: end\ndata: {\"status\":\"done\"}\n\n"), stream[max(0, len(stream)-200):])
	require.NoError(t, s2.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, s2.wait(t, 30*time.Second).code)

	list := runCLI(t, envv, "runs")
	assert.Contains(t, list.stdout, run.ID)
	assert.Regexp(t, run.ID+`\s+\S+ \S+\s+done`, list.stdout)
}

// runCLI is run, for tests whose run is a variable.
var runCLI = run

func httpDo(t *testing.T, method, url, body string) string {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Less(t, resp.StatusCode, 300, "%s %s: %s", method, url, data)
	return string(data)
}
