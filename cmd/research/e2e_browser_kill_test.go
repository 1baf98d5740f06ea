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

// TestE2EBrowserDiesWithTheAgent: SIGKILL of the agent — nothing of it
// runs after — takes its browser's whole process tree with it; the profile
// it could not remove is removed by the next run that starts a browser.
func TestE2EBrowserDiesWithTheAgent(t *testing.T) {
	chromium := chromiumForE2E(t)
	shop, _ := newShop(t)
	// The model opens the shop, then never answers again.
	oa := newFakeOpenAI(t, func(c oaCallCtx) oaReply {
		if c.n > 1 {
			return oaReply{Hang: true}
		}
		return oaReply{ToolCalls: []oaCall{{Name: "browser", Args: fmt.Sprintf(`{"action":"go_to_url","url":%q}`, shop.URL+"/")}}}
	})
	envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL(), "DEEPGRAPH_BROWSER_CHROMIUM": chromium})
	tmp := envValue(envv, "TMPDIR")
	p := startBin(t, envv, "agent", "--no-save", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(),
		"--browser", "--allow-private-urls", "--tools", "browser", "Look at the shop.")
	// The second model call comes after the page loaded: the browser runs.
	deadline := time.Now().Add(60 * time.Second)
	for oa.count() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.GreaterOrEqual(t, oa.count(), 2, "the agent never got past its first step:\n%s", p.stderr.String())
	before := browserProcesses(t, tmp)
	require.GreaterOrEqual(t, before, 3, "the browser runs several processes")
	dirs, _ := filepath.Glob(filepath.Join(tmp, "deepgraph-browser-*"))
	require.Len(t, dirs, 1)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	killed := p.wait(t, 10*time.Second)
	require.Equal(t, 128+int(syscall.SIGKILL), killed.code)
	// The kernel kills the browser as its parent dies; its children follow
	// their parent. Count until none is left, or give up.
	survivors := browserProcesses(t, tmp)
	for end := time.Now().Add(10 * time.Second); survivors > 0 && time.Now().Before(end); survivors = browserProcesses(t, tmp) {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("browser processes: %d before SIGKILL of the agent, %d survivors after", before, survivors)
	assert.Zero(t, survivors, "browser processes survived the agent's SIGKILL")
	assert.DirExists(t, dirs[0], "nothing could remove the profile of a killed run")

	// The next run that starts a browser removes it.
	oa2 := newFakeOpenAI(t, agentScript(
		oaReply{ToolCalls: []oaCall{{Name: "browser", Args: fmt.Sprintf(`{"action":"go_to_url","url":%q}`, shop.URL+"/")}}},
		oaReply{ToolCalls: []oaCall{terminate("success", "Seen.")}},
	))
	envv2 := append(envv[:0:0], envv...)
	for i, kv := range envv2 {
		if len(kv) > len("OPENAI_BASE_URL=") && kv[:len("OPENAI_BASE_URL=")] == "OPENAI_BASE_URL=" {
			envv2[i] = "OPENAI_BASE_URL=" + oa2.baseURL()
		}
	}
	res := run(t, envv2, "agent", "--no-save", "--model", "openai:gpt-4.1-mini", "--workspace", t.TempDir(),
		"--browser", "--allow-private-urls", "--tools", "browser", "Look at the shop.")
	require.Equal(t, 0, res.code, res)
	left, _ := filepath.Glob(filepath.Join(tmp, "deepgraph-browser-*"))
	assert.Empty(t, left, "the killed run's profile was not swept")
}
