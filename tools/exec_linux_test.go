//go:build linux

package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	ok := assert.Eventually(t, func() bool { left = marked(mark); return len(left) == 0 }, 5*time.Second, 10*time.Millisecond)
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
	mark := testMark(t)
	tool, ws := newBash(t, ExecOptions{KillGrace: 100 * time.Millisecond, Env: []string{mark}})
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
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the timeout")
	}
	noSurvivors(t, mark)
}

func TestExecCancellationKillsSetsidChildren(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not found")
	}
	mark := testMark(t)
	tool, ws := newBash(t, ExecOptions{KillGrace: 100 * time.Millisecond, Env: []string{mark}})
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
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancellation")
	}
	noSurvivors(t, mark)
}

func TestExecSetsidChildrenDieWithTheCommand(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not found")
	}
	mark := testMark(t)
	tool, ws := newBash(t, ExecOptions{KillGrace: 100 * time.Millisecond, Env: []string{mark}})
	res, err := runCmd(t, context.Background(), tool, "command",
		`setsid sh -c 'echo $$ > sid.pid; exec sleep 1000' & while [ ! -s sid.pid ]; do sleep 0.01; done; echo ok`)
	require.NoError(t, err)
	assert.False(t, res.Failed(), res.Error)
	_, err = os.Stat(filepath.Join(ws, "sid.pid"))
	require.NoError(t, err)
	noSurvivors(t, mark)
	assert.NotContains(t, res.Output, "left the command's process group", "the escapee was killed, so it held no output open")
}

// TestExecChildDiesWithTheAgent: when the process running the tool is
// killed (SIGKILL cannot be caught), the command it started dies too. The
// test runs itself as that process (TestExecHelperProcess).
func TestExecChildDiesWithTheAgent(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	ws := t.TempDir()
	helper := exec.Command(os.Args[0], "-test.run=^TestExecHelperProcess$")
	helper.Env = append(os.Environ(), "DG_EXEC_HELPER_WS="+ws)
	require.NoError(t, helper.Start())
	pids := waitForPIDs(t, ws, "sh")
	require.NoError(t, helper.Process.Kill())
	_ = helper.Wait()
	assert.Eventually(t, func() bool { return gone(pids["sh"]) }, 5*time.Second, 10*time.Millisecond,
		"the command (pid %d) outlived the killed agent", pids["sh"])
}

func TestExecHelperProcess(t *testing.T) {
	ws := os.Getenv("DG_EXEC_HELPER_WS")
	if ws == "" {
		t.Skip("runs only as the helper of TestExecChildDiesWithTheAgent")
	}
	tool, err := NewBash(ExecOptions{AllowExec: true, Workspace: ws})
	require.NoError(t, err)
	_, _ = runCmd(t, context.Background(), tool, "command", `echo $$ > sh.pid; sleep 1000`)
}
