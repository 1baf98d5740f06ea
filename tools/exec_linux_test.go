//go:build linux

package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/procgroup"
)

// testMark is an environment entry that tags the processes of one test, so
// that /proc tells which of them still run.
func testMark(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "DG_TEST_MARK=" + hex.EncodeToString(b)
}

// marked lists the running processes (zombies excluded: their environment
// reads empty) whose environment holds mark.
func marked(mark string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if bytes.Contains(append([]byte{0}, env...), []byte("\x00"+mark+"\x00")) && !gone(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// noSurvivors fails unless every process tagged with mark is gone, and
// kills the survivors.
func noSurvivors(t *testing.T, mark string) {
	t.Helper()
	var left []int
	ok := assert.Eventually(t, func() bool { left = marked(mark); return len(left) == 0 }, 30*time.Second, 10*time.Millisecond)
	if !ok {
		t.Errorf("processes %v outlived the call", left)
	}
	for _, pid := range left {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// treeCommand starts a background child, a setsid child (a new session and
// process group) and a double-forked setsid grandchild, writes their pid
// files, then waits.
const treeCommand = `sleep 1000 & echo $! > bg.pid
setsid sh -c 'echo $$ > sid.pid; exec sleep 1000' &
(setsid sh -c 'sleep 1000 & echo $! > deep.pid; wait' &) 
wait`

func TestExecTimeoutKillsSetsidChildren(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not found")
	}
	for _, c := range containments() {
		t.Run(c.String(), func(t *testing.T) {
			mark := testMark(t)
			tool, ws := newBash(t, ExecOptions{KillGrace: 100 * time.Millisecond, Env: []string{mark}})
			contain(t, tool, c)
			fire := manualTimeout(t, tool)
			done := make(chan Result, 1)
			go func() {
				res, err := runCmd(t, context.Background(), tool, "command", treeCommand)
				assert.NoError(t, err)
				done <- res
			}()
			waitForPIDs(t, ws, "bg", "sid", "deep")
			fire()
			select {
			case res := <-done:
				assert.Contains(t, res.Error, "timed out")
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return after the timeout")
			}
			noSurvivors(t, mark)
		})
	}
}

func TestExecCancellationKillsSetsidChildren(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not found")
	}
	for _, c := range containments() {
		t.Run(c.String(), func(t *testing.T) {
			mark := testMark(t)
			tool, ws := newBash(t, ExecOptions{KillGrace: 100 * time.Millisecond, Env: []string{mark}})
			contain(t, tool, c)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := runCmd(t, ctx, tool, "command", treeCommand)
				done <- err
			}()
			waitForPIDs(t, ws, "bg", "sid", "deep")
			cancel()
			select {
			case err := <-done:
				assert.ErrorIs(t, err, context.Canceled)
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return after cancellation")
			}
			noSurvivors(t, mark)
		})
	}
}

func TestExecSetsidChildrenDieWithTheCommand(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not found")
	}
	for _, c := range containments() {
		t.Run(c.String(), func(t *testing.T) {
			mark := testMark(t)
			tool, ws := newBash(t, ExecOptions{KillGrace: 100 * time.Millisecond, Env: []string{mark}})
			contain(t, tool, c)
			res, err := runCmd(t, context.Background(), tool, "command",
				`setsid sh -c 'echo $$ > sid.pid; exec sleep 1000' & while [ ! -s sid.pid ]; do sleep 0.01; done; echo ok`)
			require.NoError(t, err)
			assert.False(t, res.Failed(), res.Error)
			_, err = os.Stat(filepath.Join(ws, "sid.pid"))
			require.NoError(t, err)
			noSurvivors(t, mark)
			assert.NotContains(t, res.Output, "left the command's process group", "the escapee was killed, so it held no output open")
		})
	}
}

// escapeCommand starts eight sleeps that try every way out of the call —
// setsid, a cleared environment (env -i), a double fork, a shell in a new
// session with children of its own, nohup — notes its own pid and that
// they started, and sleeps too. The sleeps share a unique duration, tag,
// by which ps finds them.
func escapeCommand(tag string) string {
	s := "/bin/sleep " + tag
	return strings.Join([]string{
		"echo $$ > sh.pid",
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

// sleeping lists the processes ps shows running /bin/sleep tag (zombies
// excluded).
func sleeping(t *testing.T, tag string) []int {
	t.Helper()
	out, err := exec.Command("ps", "-eo", "pid=,stat=,args=").Output()
	require.NoError(t, err)
	var pids []int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[2] == "/bin/sleep" && f[3] == tag && !strings.HasPrefix(f[1], "Z") {
			pid, err := strconv.Atoi(f[0])
			require.NoError(t, err)
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestExecAgentEndsLeaveNoProcess: a helper process acting as the agent
// (TestExecAgentHelper) runs escapeCommand through the bash tool; the call
// then ends by the tool's timeout, by the run's deadline, or by the agent
// being interrupted (SIGINT), terminated (SIGTERM) or killed (SIGKILL).
// ps counts the sleeps left: none, in every case, in a PID namespace; with
// the fallback, none but after a SIGKILL, where only the command itself is
// sure to die (Pdeathsig) and what it left behind may survive.
func TestExecAgentEndsLeaveNoProcess(t *testing.T) {
	for _, tool := range []string{"bash", "setsid", "env", "nohup", "ps"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
	if _, err := os.Stat("/bin/sleep"); err != nil {
		t.Skip("/bin/sleep not found")
	}
	scenarios := []struct {
		name, mode string
		signal     syscall.Signal
	}{
		{"tool timeout", "tool-timeout", 0},
		{"run deadline", "run-timeout", 0},
		{"SIGINT", "signal", syscall.SIGINT},
		{"SIGTERM", "signal", syscall.SIGTERM},
		{"SIGKILL", "signal", syscall.SIGKILL},
	}
	for _, c := range containments() {
		for _, sc := range scenarios {
			t.Run(c.String()+"/"+sc.name, func(t *testing.T) {
				// Each scenario has its own agent process and counts only
				// the sleeps with its own tag: they run side by side, most
				// of their time spent waiting for a timeout or a signal.
				t.Parallel()
				ws, err := filepath.EvalSymlinks(t.TempDir())
				require.NoError(t, err)
				b := make([]byte, 6)
				_, err = rand.Read(b)
				require.NoError(t, err)
				tag := fmt.Sprintf("3600.%d", 100000+int(b[0])<<16|int(b[1])<<8|int(b[2]))
				helper := exec.Command(os.Args[0], "-test.run=^TestExecAgentHelper$")
				helper.Env = append(os.Environ(), "DG_EXEC_AGENT_WS="+ws, "DG_EXEC_AGENT_MODE="+sc.mode,
					"DG_EXEC_AGENT_TAG="+tag, "DG_EXEC_AGENT_FALLBACK="+strconv.FormatBool(c == procgroup.Group))
				var out bytes.Buffer
				helper.Stdout, helper.Stderr = &out, &out
				require.NoError(t, helper.Start())
				t.Cleanup(func() {
					if helper.ProcessState == nil {
						_ = helper.Process.Kill()
						_ = helper.Wait()
					}
					for _, pid := range sleeping(t, tag) {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				})
				require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(ws, "started.txt")); return err == nil },
					30*time.Second, 10*time.Millisecond, "the command never started its processes")
				sh := waitForPIDs(t, ws, "sh")["sh"]
				// The escapees start in the background: started.txt may come
				// before the last of them has exec'd sleep.
				require.Eventually(t, func() bool { return len(sleeping(t, tag)) == 9 }, 30*time.Second, 10*time.Millisecond,
					"the command runs eight escapees and its own sleep")
				// The end comes now that all nine run: a signal, or SIGUSR1,
				// which fires the tool's timeout or the run's deadline.
				end := sc.signal
				if end == 0 {
					end = syscall.SIGUSR1
				}
				require.NoError(t, helper.Process.Signal(end))
				waited := make(chan error, 1)
				go func() { waited <- helper.Wait() }()
				select {
				case <-waited:
				case <-time.After(60 * time.Second):
					_ = helper.Process.Kill()
					<-waited
					t.Fatalf("the agent did not end:\n%s", out.String())
				}
				assert.Eventually(t, func() bool { return gone(sh) }, 30*time.Second, 10*time.Millisecond, "the command outlived the call")
				if c == procgroup.Group && sc.signal == syscall.SIGKILL {
					// The fallback's limit (see procgroup's documentation):
					// what the command orphaned outlives a killed agent.
					t.Logf("%s, %s: %d of 9 sleeps survived", c, sc.name, len(sleeping(t, tag)))
					return
				}
				var left []int
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					if left = sleeping(t, tag); len(left) == 0 {
						break
					}
				}
				t.Logf("%s, %s: %d of 9 sleeps survived", c, sc.name, len(left))
				assert.Empty(t, left, "sleeps outlived the call; agent output:\n%s", out.String())
			})
		}
	}
}

// TestExecAgentHelper is the agent of TestExecAgentEndsLeaveNoProcess.
func TestExecAgentHelper(t *testing.T) {
	ws := os.Getenv("DG_EXEC_AGENT_WS")
	if ws == "" {
		t.Skip("runs only as the helper of TestExecAgentEndsLeaveNoProcess")
	}
	opts := ExecOptions{AllowExec: true, Workspace: ws, Timeout: time.Hour, KillGrace: 200 * time.Millisecond}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	tool, err := NewBash(opts)
	require.NoError(t, err)
	if os.Getenv("DG_EXEC_AGENT_FALLBACK") == "true" {
		contain(t, tool, procgroup.Group)
	}
	// The timeouts fire when the test sends SIGUSR1, once it has seen all
	// nine processes start, rather than after a duration a loaded machine
	// might not start them within.
	fired := make(chan os.Signal, 1)
	signal.Notify(fired, syscall.SIGUSR1)
	defer signal.Stop(fired)
	switch os.Getenv("DG_EXEC_AGENT_MODE") {
	case "tool-timeout":
		fire := manualTimeout(t, tool)
		go func() { <-fired; fire() }()
	case "run-timeout":
		// The run's context ends as at its deadline.
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		go func() { <-fired; cancel(context.DeadlineExceeded) }()
	}
	res, err := runCmd(t, ctx, tool, "command", escapeCommand(os.Getenv("DG_EXEC_AGENT_TAG")))
	t.Logf("result: %+v, error: %v", res, err)
}
