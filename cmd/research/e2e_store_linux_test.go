//go:build linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The run store on a full disk and on a read-only one, end to end: the
// binary runs in a mount namespace of its own (unshare -m) where the
// store's directory is a tiny tmpfs or a read-only bind mount, so the disk
// is really full and the file system really read-only — for root too, whom
// file modes do not stop. Without the privilege to make a mount namespace
// the tests skip.

// inMountNS returns the command line running the binary with args after
// setup, a shell script run with $1 = dir, in a mount namespace of its own.
func inMountNS(t *testing.T, dir, setup string, args ...string) []string {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare is not installed: the store tests need a mount namespace")
	}
	if out, err := exec.Command(unshare, "-m", "sh", "-c", "mount -t tmpfs -o size=16k tmpfs \"$1\"", "sh", t.TempDir()).CombinedOutput(); err != nil {
		t.Skipf("cannot make a mount namespace with a tmpfs here (needs root or CAP_SYS_ADMIN): %v: %s", err, out)
	}
	script := setup + ` && shift && exec "$@"`
	return append([]string{unshare, "-m", "sh", "-c", script, "sh", dir, binary}, args...)
}

// runCmd runs the command line cmd.
func runCmd(t *testing.T, envv []string, cmd []string) result {
	t.Helper()
	return runBin(t, cmd[0], envv, "", cmd[1:]...)
}

const (
	readOnlyMount = `mount --bind "$1" "$1" && mount -o remount,ro,bind "$1"`
	// fullDisk mounts a 64 KiB tmpfs and fills it.
	fullDisk = `mount -t tmpfs -o size=64k tmpfs "$1" && { head -c 1000000 /dev/zero > "$1/fill" 2>/dev/null || true; }`
)

func TestE2EStoreReadOnly(t *testing.T) {
	t.Parallel()
	g := newFakeGemini(t)
	envv := geminiEnv(t, g, nil)
	dir := t.TempDir()
	store := filepath.Join(dir, "runs.db")
	res := run(t, envv, "--store", store, "--loops", "1", "Wer gewann die Euro 2024?")
	require.Equal(t, 0, res.code, res)
	id := runIDOf(t, res.stderr)
	answer := strings.SplitN(res.stdout, "\n", 2)[0]
	calls := g.count()

	// Listed and shown, read-only.
	res = runCmd(t, envv, inMountNS(t, dir, readOnlyMount, "--store", store, "runs"))
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stdout, id)
	res = runCmd(t, envv, inMountNS(t, dir, readOnlyMount, "--store", store, "runs", "--format", "json"))
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stdout, `"id": "`+id+`"`)
	res = runCmd(t, envv, inMountNS(t, dir, readOnlyMount, "--store", store, "show", id))
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stdout, answer)

	// A new run, and a prune, say the store is read-only, name it and
	// say what to do; nothing is paid for.
	for _, args := range [][]string{{"Wer gewann?"}, {"runs", "--prune", "1d"}, {"rm", id}} {
		res = runCmd(t, envv, inMountNS(t, dir, readOnlyMount, append([]string{"--store", store}, args...)...))
		require.Equal(t, exitStore, res.code, "%v: %s", args, res)
		assert.Contains(t, res.stderr, "research: the run store "+store+" is read-only", args)
		assert.Contains(t, res.stderr, "--no-save", args)
		assert.Contains(t, res.stderr, "research runs and research show can still read it", args)
		assert.NotContains(t, res.stderr, "(4874)", args)
	}
	assert.Equal(t, calls, g.count(), "nothing was sent to the model")
}

func TestE2EStoreDiskFullAtOpen(t *testing.T) {
	t.Parallel()
	g := newFakeGemini(t)
	envv := geminiEnv(t, g, nil)
	dir := t.TempDir()
	store := filepath.Join(dir, "runs.db")
	res := runCmd(t, envv, inMountNS(t, dir, fullDisk, "--store", store, "Wer gewann?"))
	require.Equal(t, exitStore, res.code, res)
	assert.Contains(t, res.stderr, "research: the run store "+store+" cannot be written: its disk is full")
	assert.Contains(t, res.stderr, "0 B free")
	assert.Contains(t, res.stderr, "free space there, set --store to a file on another disk, or --no-save")
	assert.NotContains(t, res.stdout+res.stderr, "configuration")
	assert.Zero(t, g.count(), "nothing was sent to the model")

	// An existing store on a full disk is still listed.
	mk := filepath.Join(t.TempDir(), "runs.db")
	res = run(t, envv, "--store", mk, "--loops", "1", "Wer gewann die Euro 2024?")
	require.Equal(t, 0, res.code, res)
	id := runIDOf(t, res.stderr)
	// $1 = dir, $2 = the store to copy in: the script shifts $1 off, and
	// inMountNS's $2.
	copyStore := `mount -t tmpfs -o size=1m tmpfs "$1" && cp "$2" "$1/runs.db" && { head -c 2000000 /dev/zero > "$1/fill" 2>/dev/null || true; } && shift`
	cmd := inMountNS(t, dir, copyStore, "--store", store, "runs")
	cmd = append(cmd[:7:7], append([]string{mk}, cmd[7:]...)...)
	res = runCmd(t, envv, cmd)
	require.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stdout, id)
}

// TestE2EStoreFailsMidRun: the disk fills while the run searches; the run
// goes on, its report is printed, a warning names the store and says the
// run cannot be resumed, and the exit status is 8.
func TestE2EStoreFailsMidRun(t *testing.T) {
	t.Parallel()
	g := newFakeGemini(t)
	reached := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	g.setScript(func(c geminiCall) bool {
		if c.req.grounded() {
			once.Do(func() { close(reached) })
			<-release
		}
		return false
	})
	envv := geminiEnv(t, g, nil)
	dir := t.TempDir()
	store := filepath.Join(dir, "runs.db")
	cmd := inMountNS(t, dir, `mount -t tmpfs -o size=4m tmpfs "$1"`, "--store", store, "--loops", "1", "Wer gewann die Euro 2024?")
	p := exec.Command(cmd[0], cmd[1:]...)
	p.Env = envv
	s := &started{cmd: p, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}}
	p.Stdout, p.Stderr = s.stdout, s.stderr
	require.NoError(t, p.Start())
	s.start = time.Now()
	t.Cleanup(func() {
		if p.ProcessState == nil {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	})
	select {
	case <-reached:
	case <-time.After(60 * time.Second):
		close(release)
		t.Fatalf("the run never searched:\n%s", s.stderr.String())
	}
	// The binary's view of dir, in its mount namespace: fill its tmpfs.
	fill(t, filepath.Join("/proc", strconv.Itoa(p.Process.Pid), "root", dir, "fill"))
	close(release)
	res := s.wait(t, 60*time.Second)
	t.Logf("the disk filled during the run:\n%s", res)

	require.Equal(t, exitStore, res.code, res)
	assert.Contains(t, res.stdout, "## Sources", "the report is printed")
	assert.Contains(t, res.stderr, "the run store "+store+" failed while saving the run")
	assert.Contains(t, res.stderr, "cannot be resumed")
	id := runIDOf(t, res.stderr)
	assert.Contains(t, res.stderr, "research: run "+id+" was not kept")
	assert.Contains(t, res.stderr, "its disk is full")
	assert.NotContains(t, res.stderr, "panic")
}

// fill writes zeros to path until its file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			require.True(t, errors.Is(err, syscall.ENOSPC), "filling %s: %v", path, err)
			return
		}
	}
}
