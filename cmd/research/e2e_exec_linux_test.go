//go:build linux

package main

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/procgroup"
	"github.com/deepgraph/deepgraph/tools"
)

// escapeCommand is the bash call of TestE2EAgentExecLeavesNoProcess: eight
// sleeps that try every way out of the call — setsid, a cleared
// environment (env -i), a double fork, a shell in a new session with
// children of its own — then a note that they started, and a wait. Each
// sleep has the same unique duration, so ps finds them by it.
func escapeCommand(tag string) string {
	s := "/bin/sleep " + tag
	return strings.Join([]string{
		"setsid env -i " + s + " &",
		"env -i " + s + " &",
		"( setsid env -i " + s + " & )",
		"( ( env -i " + s + " & ) & )",
		"setsid env -i /bin/sh -c '" + s + " & " + s + " & " + s + " & wait' &",
		"nohup setsid " + s + " >/dev/null 2>&1 &",
		"sleep 0.2; echo started > started.txt",
		s,
	}, "\n")
}

// survivors lists the sleeps of escapeCommand(tag) that run, as ps shows
// them (zombies excluded).
func survivors(t *testing.T, tag string) []string {
	t.Helper()
	out, err := exec.Command("ps", "-eo", "pid=,stat=,args=").Output()
	require.NoError(t, err)
	var left []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[2] == "/bin/sleep" && f[3] == tag && !strings.HasPrefix(f[1], "Z") {
			left = append(left, strings.TrimSpace(line))
		}
	}
	return left
}

// noneLeft waits (a bounded while: the kernel tears a namespace down as
// it can) for every process holding tag to be gone, then fails with those
// left, and kills them.
func noneLeft(t *testing.T, tag string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if left = survivors(t, tag); len(left) == 0 {
			break
		}
	}
	t.Logf("survivors: %d", len(left))
	assert.Empty(t, left, "processes outlived the call")
	for _, l := range left {
		var pid int
		if _, err := fmt.Sscan(l, &pid); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// uniqueSleep is a sleep duration no other process has on its command
// line: 3600 seconds and a random fraction.
func uniqueSleep(t *testing.T) string {
	n, err := rand.Int(rand.Reader, big.NewInt(1e9))
	require.NoError(t, err)
	return fmt.Sprintf("3600.%09d", n.Int64())
}

// TestE2EAgentExecLeavesNoProcess: whatever a command run by the agent's
// bash tool starts — in a new session, with a cleared environment, double
// forked — dies with the call when it times out (--tool-timeout), with the
// run when it times out (--timeout), and with the agent when it is
// interrupted (SIGINT), terminated (SIGTERM) or killed (SIGKILL). ps
// counts the survivors: none. The scenarios run side by side (each
// command's sleep has a duration of its own, which is how ps tells their
// processes apart); the test as a whole is not parallel, so that no other
// test loads the machine while the timeouts run. (Where PID namespaces are refused, the
// SIGKILL case is the fallback's documented limit and is skipped; the
// tools package tests the fallback in each case.)
func TestE2EAgentExecLeavesNoProcess(t *testing.T) {
	for _, tool := range []string{"setsid", "env", "nohup", "ps"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
	if _, err := os.Stat("/bin/sleep"); err != nil {
		t.Skip("/bin/sleep not found")
	}
	model := []string{"agent", "--no-save", "--model", "openai:gpt-4.1-mini", "--allow-exec"}
	scenarios := []struct {
		name   string
		flags  []string
		signal syscall.Signal // sent once the command's processes run; 0: none
		code   int
	}{
		// The timeouts leave a loaded machine time to start all nine
		// processes before they fire.
		{name: "tool timeout", flags: []string{"--tool-timeout", "10s", "--timeout", "2m"}, code: 0},
		{name: "run timeout", flags: []string{"--timeout", "12s"}, code: 1},
		{name: "SIGINT", flags: []string{"--timeout", "2m"}, signal: syscall.SIGINT, code: 130},
		{name: "SIGTERM", flags: []string{"--timeout", "2m"}, signal: syscall.SIGTERM, code: -1},
		{name: "SIGKILL", flags: []string{"--timeout", "2m"}, signal: syscall.SIGKILL, code: 128 + 9},
	}
	contained := procgroup.Probe()
	t.Logf("containment here: %s", contained)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			if sc.signal == syscall.SIGKILL && !contained.Namespaced() {
				t.Skip("PID namespaces are not permitted here: in the fallback, what a call orphaned outlives an agent killed with SIGKILL (tools' package documentation)")
			}
			tag := uniqueSleep(t)
			args, err := json.Marshal(map[string]string{"command": escapeCommand(tag)})
			require.NoError(t, err)
			oa := newFakeOpenAI(t, agentScript(
				oaReply{ToolCalls: []oaCall{{Name: "bash", Args: string(args)}}},
				oaReply{ToolCalls: []oaCall{terminate("success", "done")}},
			))
			ws := t.TempDir()
			envv := env(t, map[string]string{"OPENAI_API_KEY": openaiKey, "OPENAI_BASE_URL": oa.baseURL()})
			s := startBin(t, envv, append(append(append([]string(nil), model...), "--workspace", ws), append(sc.flags, "start them")...)...)
			started := filepath.Join(ws, "started.txt")
			require.Eventually(t, func() bool { _, err := os.Stat(started); return err == nil }, 60*time.Second, 20*time.Millisecond,
				"the command never started its processes: %s", s.stderr)
			// The escapees start in the background: on a busy machine some may
			// still be on their way to exec /bin/sleep when started.txt appears.
			require.Eventually(t, func() bool { return len(survivors(t, tag)) == 9 }, 60*time.Second, 20*time.Millisecond,
				"the command runs its eight escapees and its own sleep: %v", survivors(t, tag))
			assert.Contains(t, s.stderr.String(), "Code execution: "+tools.ExecContainment())
			if sc.signal != 0 {
				require.NoError(t, s.cmd.Process.Signal(sc.signal))
			}
			res := s.wait(t, 90*time.Second)
			if sc.code >= 0 {
				assert.Equal(t, sc.code, res.code, res)
			} else {
				assert.NotEqual(t, 0, res.code, res)
			}
			noneLeft(t, tag)
		})
	}
}
