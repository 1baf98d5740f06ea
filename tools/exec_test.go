//go:build unix

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/procgroup"
)

func newBash(t *testing.T, opts ExecOptions) (Tool, string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	opts.AllowExec = true
	if opts.Workspace == "" {
		opts.Workspace = t.TempDir()
	}
	tool, err := NewBash(opts)
	require.NoError(t, err)
	ws, err := filepath.EvalSymlinks(opts.Workspace)
	require.NoError(t, err)
	return tool, ws
}

func runCmd(t *testing.T, ctx context.Context, tool Tool, field, code string) (Result, error) {
	t.Helper()
	b, err := json.Marshal(map[string]string{field: code})
	require.NoError(t, err)
	return tool.Run(ctx, b)
}

// containments are the containments the exec tests run under: the one
// this system permits (procgroup.Probe) and, when that is a PID namespace,
// the fallback too.
func containments() []procgroup.Containment {
	if c := procgroup.Probe(); c.Namespaced() {
		return []procgroup.Containment{c, procgroup.Group}
	}
	return []procgroup.Containment{procgroup.Group}
}

// contain makes tool run its calls under c (the fallback adopts orphans,
// as the tool does when it finds namespaces refused).
func contain(t *testing.T, tool Tool, c procgroup.Containment) {
	t.Helper()
	et, ok := tool.(*execTool)
	require.True(t, ok)
	et.contain = c
	if c == procgroup.Group {
		_ = procgroup.Adopt()
	}
}

// gone reports whether pid no longer runs (a zombie counts as gone: it runs
// no code and waits only to be reaped by its new parent). A pid of 0 or
// less (a process hostPID did not find) is gone.
func gone(pid int) bool {
	if pid <= 0 {
		return true
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false // no /proc (not Linux), or it vanished just now: ask again
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// manualTimeout makes tool's timeout fire when fire is closed instead of
// after a duration, so tests need not race a real clock.
func manualTimeout(t *testing.T, tool Tool) (fire func()) {
	t.Helper()
	et, ok := tool.(*execTool)
	require.True(t, ok)
	ch := make(chan struct{})
	et.withTimeout = func(ctx context.Context, _ time.Duration) (context.Context, context.CancelFunc) {
		c, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-ch:
				cancel()
			case <-c.Done():
			}
		}()
		return c, cancel
	}
	return func() { close(ch) }
}

// waitForPIDs waits until the command has written the named pid files into
// the workspace and returns the pids, as this process sees them (see
// hostPID).
func waitForPIDs(t *testing.T, ws string, names ...string) map[string]int {
	t.Helper()
	pids := map[string]int{}
	for _, name := range names {
		require.Eventually(t, func() bool {
			b, err := os.ReadFile(filepath.Join(ws, name+".pid"))
			if err != nil || !strings.HasSuffix(string(b), "\n") {
				return false
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				return false
			}
			host, ok := hostPID(ws, pid)
			pids[name] = host
			return ok
		}, 30*time.Second, 5*time.Millisecond, "the command did not write %s.pid, or that process is not found", name)
	}
	killLeftovers(t, pids)
	return pids
}

var pidLine = regexp.MustCompile(`(?m)^(\w+)=(\d+)$`)

// pidsIn reads the name=pid lines of a command's output, as this process
// sees the pids; a process no longer found gets 0 (gone).
func pidsIn(t *testing.T, ws, out string) map[string]int {
	t.Helper()
	pids := map[string]int{}
	for _, m := range pidLine.FindAllStringSubmatch(out, -1) {
		n, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		if host, ok := hostPID(ws, n); ok {
			pids[m[1]] = host
		} else {
			pids[m[1]] = 0
		}
	}
	return pids
}

func killLeftovers(t *testing.T, pids map[string]int) {
	t.Cleanup(func() {
		for _, pid := range pids {
			if pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

func TestExecToolsRefusedUnlessEnabled(t *testing.T) {
	ws := t.TempDir()
	_, err := NewBash(ExecOptions{Workspace: ws})
	assert.ErrorIs(t, err, ErrExecDisabled)
	_, err = NewPythonExecute(ExecOptions{Workspace: ws})
	assert.ErrorIs(t, err, ErrExecDisabled)

	c, err := NewDefault(DefaultOptions{Editor: EditorOptions{Workspace: ws}, Exec: ExecOptions{Workspace: ws}})
	require.NoError(t, err)
	assert.Equal(t, []string{EditorName, PlanningName, TerminateName}, c.Names(), "no exec tools without AllowExec")

	c, err = NewDefault(DefaultOptions{Editor: EditorOptions{Workspace: ws}, Exec: ExecOptions{AllowExec: true}})
	require.NoError(t, err)
	assert.Equal(t, []string{EditorName, PythonExecuteName, BashName, PlanningName, TerminateName}, c.Names())

	_, err = NewBash(ExecOptions{AllowExec: true})
	assert.ErrorContains(t, err, "workspace directory is required")
	_, err = NewBash(ExecOptions{AllowExec: true, Workspace: ws, Env: []string{"NOEQUALS"}})
	assert.ErrorContains(t, err, "not KEY=VALUE")
}

func TestBashBasics(t *testing.T) {
	tool, ws := newBash(t, ExecOptions{})
	tests := []struct {
		name     string
		cmd      string
		want     string
		wantFail string
	}{
		{name: "output", cmd: "echo hello", want: "hello\n"},
		{name: "stderr combined", cmd: "echo out; echo err >&2", want: "out\nerr\n"},
		{name: "runs in the workspace", cmd: "pwd", want: ws + "\n"},
		{name: "home is the workspace", cmd: `echo "$HOME"`, want: ws + "\n"},
		{name: "no stdin", cmd: "cat; echo done", want: "done\n"},
		{name: "exit status", cmd: "echo partial; exit 3", want: "partial\n", wantFail: "exit status 3"},
		{name: "ansi stripped", cmd: `printf '\033[31mred\033[0m\n'`, want: "red\n"},
		{name: "empty", cmd: "   ", wantFail: "nothing to run: the command is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := runCmd(t, context.Background(), tool, "command", tt.cmd)
			require.NoError(t, err)
			assert.Equal(t, tt.want, res.Output)
			if tt.wantFail == "" {
				assert.False(t, res.Failed(), res.Error)
			} else {
				assert.Contains(t, res.Error, tt.wantFail)
			}
		})
	}
	res, err := runCmd(t, context.Background(), tool, "command", strings.Repeat("x", MaxCodeBytes+1))
	require.NoError(t, err)
	assert.Contains(t, res.Error, "write it to a file")
}

func TestExecEnvironmentIsScrubbed(t *testing.T) {
	t.Setenv("DEEPGRAPH_TEST_SECRET_KEY", "sk-should-not-leak")
	tool, ws := newBash(t, ExecOptions{Env: []string{"EXTRA=given", "LANG=C"}})
	res, err := runCmd(t, context.Background(), tool, "command", "env")
	require.NoError(t, err)
	require.False(t, res.Failed(), res.Error)
	assert.NotContains(t, res.Output, "sk-should-not-leak")
	assert.NotContains(t, res.Output, "DEEPGRAPH_TEST_SECRET_KEY")
	assert.Contains(t, res.Output, "HOME="+ws+"\n")
	assert.Contains(t, res.Output, "EXTRA=given\n")
	assert.Contains(t, res.Output, "LANG=C\n", "Env overrides the defaults")
	assert.Equal(t, 1, strings.Count(res.Output, "LANG="))
	assert.Contains(t, res.Output, "PATH=")
}

func TestExecOutputCap(t *testing.T) {
	tool, _ := newBash(t, ExecOptions{MaxOutputBytes: 1000})
	res, err := runCmd(t, context.Background(), tool, "command", `echo START; head -c 100000 /dev/zero | tr '\0' a; echo; echo END`)
	require.NoError(t, err)
	require.False(t, res.Failed(), res.Error)
	assert.True(t, strings.HasPrefix(res.Output, "START\n"), "the head is kept")
	assert.True(t, strings.HasSuffix(res.Output, "END\n"), "the tail is kept")
	assert.Contains(t, res.Output, "output cut: 99011 of 100011 bytes omitted")
	assert.Less(t, len(res.Output), 1200)
}

func TestExecTimeoutKillsTheProcessGroup(t *testing.T) {
	for _, c := range containments() {
		t.Run(c.String(), func(t *testing.T) {
			tool, ws := newBash(t, ExecOptions{Timeout: time.Hour, KillGrace: 100 * time.Millisecond})
			contain(t, tool, c)
			fire := manualTimeout(t, tool)
			type outcome struct {
				res Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				// A background grandchild, a grandchild of a subshell, and a
				// foreground child.
				res, err := runCmd(t, context.Background(), tool, "command",
					`sleep 100 & echo $! > bg.pid; (sleep 100 & echo $! > sub.pid; wait) & sleep 100 & echo $! > fg.pid; wait`)
				done <- outcome{res, err}
			}()
			pids := waitForPIDs(t, ws, "bg", "sub", "fg")
			fire()
			select {
			case o := <-done:
				require.NoError(t, o.err)
				assert.Contains(t, o.res.Error, "timed out after 1h0m0s; the command and its child processes were killed")
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return after the timeout")
			}
			for name, pid := range pids {
				assert.Eventually(t, func() bool { return gone(pid) }, 30*time.Second, 10*time.Millisecond, "%s (pid %d) survived", name, pid)
			}
		})
	}
}

func TestExecTimeoutEscalatesToSIGKILL(t *testing.T) {
	for _, c := range containments() {
		t.Run(c.String(), func(t *testing.T) {
			tool, ws := newBash(t, ExecOptions{KillGrace: 100 * time.Millisecond})
			contain(t, tool, c)
			fire := manualTimeout(t, tool)
			done := make(chan Result, 1)
			go func() {
				res, err := runCmd(t, context.Background(), tool, "command", `trap "" TERM; sleep 100 & echo $! > bg.pid; echo $$ > sh.pid; wait`)
				assert.NoError(t, err)
				done <- res
			}()
			pids := waitForPIDs(t, ws, "bg", "sh")
			fire()
			select {
			case res := <-done:
				assert.Contains(t, res.Error, "timed out")
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return after the timeout")
			}
			for name, pid := range pids {
				assert.Eventually(t, func() bool { return gone(pid) }, 30*time.Second, 10*time.Millisecond, "%s (pid %d) survived", name, pid)
			}
		})
	}
}

func TestExecRealTimeout(t *testing.T) {
	tool, _ := newBash(t, ExecOptions{Timeout: 200 * time.Millisecond, KillGrace: 100 * time.Millisecond})
	res, err := runCmd(t, context.Background(), tool, "command", `sleep 100`)
	require.NoError(t, err)
	assert.Contains(t, res.Error, "timed out after 200ms")
}

func TestExecBackgroundProcessesDieWithTheCommand(t *testing.T) {
	for _, c := range containments() {
		t.Run(c.String(), func(t *testing.T) {
			tool, ws := newBash(t, ExecOptions{})
			contain(t, tool, c)
			res, err := runCmd(t, context.Background(), tool, "command", `sleep 100 & echo bg=$!`)
			require.NoError(t, err)
			require.False(t, res.Failed(), res.Error)
			pids := pidsIn(t, ws, res.Output)
			killLeftovers(t, pids)
			require.Len(t, pids, 1, res.Output)
			assert.Eventually(t, func() bool { return gone(pids["bg"]) }, 30*time.Second, 10*time.Millisecond)
		})
	}
}

func TestExecCancellationKillsTheCommandAndItsChildren(t *testing.T) {
	for _, c := range containments() {
		t.Run(c.String(), func(t *testing.T) {
			tool, ws := newBash(t, ExecOptions{KillGrace: 100 * time.Millisecond})
			contain(t, tool, c)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type outcome struct {
				res Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := runCmd(t, ctx, tool, "command", `sleep 100 & echo $! > bg.pid; echo $$ > sh.pid; wait`)
				done <- outcome{res, err}
			}()
			pids := waitForPIDs(t, ws, "bg", "sh")
			bg, sh := pids["bg"], pids["sh"]
			cancel()
			select {
			case o := <-done:
				assert.ErrorIs(t, o.err, context.Canceled)
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return after cancellation")
			}
			for _, pid := range []int{bg, sh} {
				assert.Eventually(t, func() bool { return gone(pid) }, 30*time.Second, 10*time.Millisecond, "pid %d survived", pid)
			}
		})
	}
}

// TestExecEscapedProcessDoesNotHangTheCall: a process that leaves the
// command's group and clears its environment, and holds the output open.
// On Linux it dies with the call all the same (the PID namespace, or the
// sweep of adopted orphans); elsewhere the call still returns, and says
// that something may still run.
func TestExecEscapedProcessDoesNotHangTheCall(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not found")
	}
	for _, c := range containments() {
		t.Run(c.String(), func(t *testing.T) {
			tool, ws := newBash(t, ExecOptions{KillGrace: 150 * time.Millisecond})
			contain(t, tool, c)
			// The command returns only once the escapee has left the group,
			// so the group kill cannot catch it first; it clears its
			// environment, so it escapes the search for the call's tag too.
			// It would hold the output for ten minutes: a call that waited
			// for it would not return within go test's timeout.
			res, err := runCmd(t, context.Background(), tool, "command",
				`setsid env -i sh -c 'echo $$ > esc.pid; : > escaped; exec sleep 600' & while [ ! -e escaped ]; do sleep 0.01; done; cat esc.pid`)
			require.NoError(t, err)
			if runtime.GOOS != "linux" {
				killLeftovers(t, pidsIn(t, ws, "esc="+res.Output))
				assert.Contains(t, res.Output, "left the command's process group")
				return
			}
			assert.NotContains(t, res.Output, "left the command's process group", "nothing outlived the call to hold the output")
			pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(res.Output, "\n", 2)[0]))
			require.NoError(t, err, res.Output)
			if host, ok := hostPID(ws, pid); ok {
				killLeftovers(t, map[string]int{"esc": host})
				assert.Eventually(t, func() bool { return gone(host) }, 30*time.Second, 10*time.Millisecond, "the escapee survived")
			}
		})
	}
}

func TestExecCommandPrefix(t *testing.T) {
	tool, ws := newBash(t, ExecOptions{CommandPrefix: []string{"env", "MOUNT={workspace}:/w"}})
	res, err := runCmd(t, context.Background(), tool, "command", `echo "$MOUNT"`)
	require.NoError(t, err)
	require.False(t, res.Failed(), res.Error)
	assert.Equal(t, ws+":/w\n", res.Output)

	missing, _ := newBash(t, ExecOptions{CommandPrefix: []string{"/nonexistent/runtime"}})
	_, err = runCmd(t, context.Background(), missing, "command", "true")
	assert.ErrorContains(t, err, "starting /nonexistent/runtime")
}

func TestPythonExecute(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	t.Setenv("DEEPGRAPH_TEST_SECRET_KEY", "sk-should-not-leak")
	ws := t.TempDir()
	tool, err := NewPythonExecute(ExecOptions{AllowExec: true, Workspace: ws, KillGrace: 100 * time.Millisecond})
	require.NoError(t, err)
	tests := []struct {
		name     string
		code     string
		want     []string
		wantFail string
	}{
		{name: "print", code: "print(6*7)", want: []string{"42\n"}},
		{name: "multi-line", code: "def f(x):\n    return x + 1\nprint(f(1))\nprint('é')", want: []string{"2\né\n"}},
		{name: "files land in the workspace", code: "open('out.txt','w').write('x')\nimport os\nprint(os.path.exists(os.path.join(os.environ['HOME'], 'out.txt')))", want: []string{"True\n"}},
		{name: "exception", code: "raise ValueError('bad')", want: []string{"ValueError: bad"}, wantFail: "exit status 1"},
		{name: "env scrubbed", code: "import os\nprint('DEEPGRAPH_TEST_SECRET_KEY' in os.environ)", want: []string{"False\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := runCmd(t, context.Background(), tool, "code", tt.code)
			require.NoError(t, err)
			for _, w := range tt.want {
				assert.Contains(t, res.Output, w)
			}
			if tt.wantFail == "" {
				assert.False(t, res.Failed(), res.Error)
			} else {
				assert.Contains(t, res.Error, tt.wantFail)
			}
		})
	}
	assert.FileExists(t, filepath.Join(ws, "out.txt"))

	short, err := NewPythonExecute(ExecOptions{AllowExec: true, Workspace: ws, Timeout: 300 * time.Millisecond, KillGrace: 100 * time.Millisecond})
	require.NoError(t, err)
	res, err := runCmd(t, context.Background(), short, "code", "import time\ntime.sleep(300)")
	require.NoError(t, err)
	assert.Contains(t, res.Error, "timed out after 300ms")
}

func TestHeadTail(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{name: "fits", max: 10, writes: []string{"abc", "de"}, want: "abcde"},
		{name: "exactly", max: 4, writes: []string{"ab", "cd"}, want: "abcd"},
		{name: "cut", max: 4, writes: []string{"ab", "cdef", "gh"}, want: "ab\n… [output cut: 4 of 8 bytes omitted; showing the first 2 and the last 2] …\ngh"},
		{name: "cut in many small writes", max: 4, writes: strings.Split("0123456789", ""), want: "01\n… [output cut: 6 of 10 bytes omitted; showing the first 2 and the last 2] …\n89"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &headTail{max: tt.max}
			for _, w := range tt.writes {
				n, err := h.Write([]byte(w))
				require.NoError(t, err)
				require.Equal(t, len(w), n)
			}
			assert.Equal(t, tt.want, h.String())
		})
	}
	h := &headTail{max: 100}
	for range 10000 {
		_, _ = h.Write([]byte("0123456789"))
	}
	assert.LessOrEqual(t, cap(h.tail), 2*50+4096+10+4096, "the tail buffer stays bounded")
}
