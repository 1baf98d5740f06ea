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

// research serve, end to end: the binary serves the page and the Agent
// Server API; a question asked over HTTP is researched against the fake
// Gemini; SIGTERM drains — the run in flight is recorded as interrupted —
// and the next serve --resume-interrupted continues it on its thread to
// the answer; research runs lists both.
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
		ID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(httpDo(t, "POST", base+"/threads/"+thread.ID+"/runs",
		`{"assistant_id":"research","input":{"messages":[{"type":"human","content":"Wer gewann die Euro 2024 und wer schoss die meisten Tore?"}]},`+
			`"config":{"configurable":{"effort":"medium"}}}`)), &run))
	require.Eventually(t, func() bool { return g.count() >= 3 }, 30*time.Second, 10*time.Millisecond, "the queries and the first search ran")
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
	var runs []struct {
		ID     string `json:"run_id"`
		Status string `json:"status"`
	}
	require.Eventually(t, func() bool {
		require.NoError(t, json.Unmarshal([]byte(httpDo(t, "GET", base2+"/threads/"+thread.ID+"/runs", "")), &runs))
		return len(runs) == 2 && runs[0].Status == "success"
	}, 30*time.Second, 20*time.Millisecond, "the interrupted run is continued")
	assert.Equal(t, run.ID, runs[1].ID)
	assert.Equal(t, "interrupted", runs[1].Status, "the run the stop interrupted")
	var state struct {
		Values struct {
			Answer  string `json:"answer"`
			Sources []any  `json:"sources"`
		} `json:"values"`
	}
	require.NoError(t, json.Unmarshal([]byte(httpDo(t, "GET", base2+"/threads/"+thread.ID+"/state", "")), &state))
	assert.Contains(t, state.Values.Answer, "Spanien gewann die Euro 2024")
	assert.NotEmpty(t, state.Values.Sources)
	require.NoError(t, s2.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, s2.wait(t, 30*time.Second).code)

	list := runCLI(t, envv, "runs")
	assert.Regexp(t, run.ID+`\s+\S+ \S+\s+interrupted`, list.stdout)
	assert.Regexp(t, runs[0].ID+`\s+\S+ \S+\s+done`, list.stdout)
	shown := runCLI(t, envv, "show", runs[0].ID) // UUIDs v7 of one moment share their first characters
	assert.Contains(t, shown.stdout, "Spanien gewann die Euro 2024", "research show reads the thread's report: %v", shown)
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
