package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readsUnder counts the page reads under path.
func readsUnder(web *recorder, path string) int {
	n := 0
	for _, r := range web.all() {
		if strings.HasPrefix(r.Path, path) {
			n++
		}
	}
	return n
}

// TestE2EResumeRepeatsNoPaidCall: a research task killed after its search
// and its page reads, while its summary is being written, resumes with
// the search and the pages served from the run store: resume repeats no
// finished search, page read or model call.
func TestE2EResumeRepeatsNoPaidCall(t *testing.T) {
	t.Parallel()
	web, webRec := newFakeWeb(t)
	sx := newFakeSearXNG(t, web.URL)
	var hang atomic.Bool
	hang.Store(true)
	script := searchResearchScript()
	oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply {
		p := c.req.prompt()
		if hang.Load() && strings.Contains(p, `<source label="S`) && strings.Contains(p, "raft log replication") {
			return oaReply{Hang: true}
		}
		return script(c)
	})
	envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL(), "SEARXNG_URL": sx.srv.URL})
	args := []string{"--allow-private-urls", "--model", "openai:gpt-4.1-mini", "--loops", "1", "How does Raft elect a leader?"}

	// The run: one task finishes; the other has searched and read its
	// pages, and waits for its summary; SIGKILL.
	p := startBin(t, envv, args...)
	p.waitStderr(t, `Searched "raft leader election"`, 30*time.Second)
	summarizing := func() bool {
		for _, pr := range summarizerPrompts(t, oa) {
			if strings.Contains(pr, "raft log replication") {
				return true
			}
		}
		return false
	}
	require.Eventually(t, summarizing, 30*time.Second, 10*time.Millisecond, "the second task never asked for its summary:\n%s", p.stderr.String())
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	killed := p.wait(t, 10*time.Second)
	require.Equal(t, 128+int(syscall.SIGKILL), killed.code, killed)
	id := runIDOf(t, killed.stderr)

	require.Equal(t, 1, searchesFor(sx, "raft log replication"))
	require.Equal(t, 3, readsUnder(webRec, "/page/raft-log-replication/"))
	modelCalls := len(oa.all())

	hang.Store(false)
	resumed := run(t, envv, "resume", id)
	require.Equal(t, 0, resumed.code, resumed)
	assertCitations(t, resumed.stdout, sx.returned())
	assert.Contains(t, resumed.stdout, "/page/raft-log-replication/1", "the killed task's sources are cited")

	// Nothing paid for before the kill is paid for again.
	assert.Equal(t, 1, searchesFor(sx, "raft leader election"), "the finished task's search")
	assert.Equal(t, 1, searchesFor(sx, "raft log replication"), "the killed task's search comes from the run store")
	assert.Equal(t, 3, readsUnder(webRec, "/page/raft-leader-election/"))
	assert.Equal(t, 3, readsUnder(webRec, "/page/raft-log-replication/"), "the killed task's page reads come from the run store")
	summaries := map[string]int{}
	for _, pr := range summarizerPrompts(t, oa) {
		for _, q := range []string{"raft leader election", "raft log replication"} {
			if strings.Contains(pr, fmt.Sprintf("%q", q)) || strings.Contains(pr, q) {
				summaries[q]++
			}
		}
	}
	assert.Equal(t, map[string]int{"raft leader election": 1, "raft log replication": 2}, summaries,
		"the finished summary is not written again; the killed one is")
	assert.Contains(t, summarizerPrompts(t, oa)[len(summarizerPrompts(t, oa))-1], "PAGE-CONTENT of /page/raft-log-replication/1",
		"the resumed summary reads the recorded pages")
	// After the kill: the killed summary again, a reflection, the answer.
	assert.Equal(t, 3, len(oa.all())-modelCalls, "model calls after the resume")
}

// TestE2EOneSearchDown: one query's search fails after its retries; the
// run answers from the other, warns which query failed, and exits 0.
func TestE2EOneSearchDown(t *testing.T) {
	t.Parallel()
	_, sx, _, vars := searchSetup(t)
	sx.setRespond(func(q string) (int, any) {
		if q == "raft log replication" {
			return http.StatusServiceUnavailable, map[string]any{"error": "maintenance"}
		}
		return 0, nil
	})
	res := run(t, env(t, vars), "--allow-private-urls", "--model", "openai:gpt-4.1-mini", "--loops", "1", "--format", "json", "How does Raft elect a leader?")
	require.Equal(t, 0, res.code, res)
	var doc struct {
		Answer   string
		Warnings []struct {
			Kind  string
			Items []string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc), res.stdout)
	assert.Contains(t, doc.Answer, "/page/raft-leader-election/1")
	var failed []string
	for _, w := range doc.Warnings {
		if w.Kind == "search_failed" {
			failed = w.Items
		}
	}
	require.Len(t, failed, 1, "the report says which search failed: %s", res.stdout)
	assert.Contains(t, failed[0], `"raft log replication": `)
	assert.Contains(t, failed[0], "503")
}
