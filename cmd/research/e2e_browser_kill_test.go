//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// browserProcesses counts the live processes of browsers whose profile is
// under tmp (every Chromium process carries its --user-data-dir).
func browserProcesses(t *testing.T, tmp string) int {
	t.Helper()
	want := []byte("--user-data-dir=" + filepath.Join(tmp, "deepgraph-browser-"))
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(cmdline, want) {
			n++
		}
	}
	return n
}

// startBrowsing starts research agent --browser with a model that opens
// the shop and then never answers, and waits until the browser runs; it
// returns the run, its TMPDIR and how many browser processes run.
func startBrowsing(t *testing.T, more ...string) (*started, string, int) {
	t.Helper()
	chromium := chromiumForE2E(t)
	shop, _ := newShop(t)
	oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply {
		if c.n > 1 {
			return oaReply{Hang: true}
		}
		return oaReply{ToolCalls: []oaCall{{Name: "browser", Args: fmt.Sprintf(`{"action":"go_to_url","url":%q}`, shop.URL+"/")}}}
	})
	envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL(), "DEEPGRAPH_BROWSER_CHROMIUM": chromium})
	tmp := envValue(envv, "TMPDIR")
	args := append([]string{"agent", "--no-save", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(),
		"--browser", "--allow-private-urls", "--tools", "browser"}, more...)
	p := startBin(t, envv, append(args, "Look at the shop.")...)
	deadline := time.Now().Add(60 * time.Second)
	for oa.count() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.GreaterOrEqual(t, oa.count(), 2, "the agent never got past its first step:\n%s", p.stderr.String())
	n := browserProcesses(t, tmp)
	require.GreaterOrEqual(t, n, 3, "the browser runs several processes")
	return p, tmp, n
}

// TestE2EBrowserEndsWithTheRun: a run that times out, and one stopped
// with Ctrl-C (SIGINT), leave no browser process and no profile behind.
func TestE2EBrowserEndsWithTheRun(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		stop func(*started)
		code int
	}{
		{name: "timeout", args: []string{"--timeout", "8s"}, code: 1},
		{name: "Ctrl-C", stop: func(p *started) { _ = p.cmd.Process.Signal(syscall.SIGINT) }, code: 130},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, tmp, before := startBrowsing(t, tt.args...)
			if tt.stop != nil {
				tt.stop(p)
			}
			res := p.wait(t, 60*time.Second)
			require.Equal(t, tt.code, res.code, res)
			// The run closes its browser before it exits: nothing is left
			// at once.
			assert.Zero(t, browserProcesses(t, tmp), "browser processes outlived the run")
			left, _ := filepath.Glob(filepath.Join(tmp, "deepgraph-browser-*"))
			assert.Empty(t, left, "the profile directory is left")
			t.Logf("%s: %d browser processes while it ran, none after", tt.name, before)
		})
	}
}

// TestE2EBrowserDiesWithTheAgent: SIGKILL of the agent — nothing of it
// runs after — takes its browser's whole process tree with it; the profile
// it could not remove is removed by the next run that starts a browser.
func TestE2EBrowserDiesWithTheAgent(t *testing.T) {
	t.Parallel()
	p, tmp, before := startBrowsing(t)
	dirs, _ := filepath.Glob(filepath.Join(tmp, "deepgraph-browser-*"))
	require.Len(t, dirs, 1)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	killed := p.wait(t, 10*time.Second)
	require.Equal(t, 128+int(syscall.SIGKILL), killed.code)
	// The kernel kills the browser as its parent dies; its children follow
	// their parent. Count until none is left, or give up.
	killedAt := time.Now()
	survivors := browserProcesses(t, tmp)
	for end := time.Now().Add(10 * time.Second); survivors > 0 && time.Now().Before(end); survivors = browserProcesses(t, tmp) {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("browser processes: %d before SIGKILL of the agent, %d survivors after (counted %s after the agent was reaped)",
		before, survivors, time.Since(killedAt).Round(time.Millisecond))
	assert.Zero(t, survivors, "browser processes survived the agent's SIGKILL")
	assert.DirExists(t, dirs[0], "nothing could remove the profile of a killed run")

	// The next run that starts a browser removes it.
	chromium := chromiumForE2E(t)
	shop, _ := newShop(t)
	oa2 := newFakeOpenAI(t, agentScript(
		oaReply{ToolCalls: []oaCall{{Name: "browser", Args: fmt.Sprintf(`{"action":"go_to_url","url":%q}`, shop.URL+"/")}}},
		oaReply{ToolCalls: []oaCall{terminate("success", "Seen.")}},
	))
	envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa2.baseURL(), "DEEPGRAPH_BROWSER_CHROMIUM": chromium,
		"TMPDIR": tmp})
	res := run(t, envv, "agent", "--no-save", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(),
		"--browser", "--allow-private-urls", "--tools", "browser", "Look at the shop.")
	require.Equal(t, 0, res.code, res)
	left, _ := filepath.Glob(filepath.Join(tmp, "deepgraph-browser-*"))
	assert.Empty(t, left, "the killed run's profile was not swept")
}
