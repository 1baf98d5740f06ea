package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The end-to-end tests run the program as a user would: as its own
// process, started from a file named research, with a scrubbed environment
// against httptest fakes of the providers' real wire protocols. That
// program is this test binary: started under the name research it runs
// Main instead of the tests (TestMain). So the e2e tests need no second
// build and link of the whole program — the most expensive step of this
// package's tests — and the program runs with the race detector whenever
// the tests do: the e2e tests are where the whole program runs its
// goroutines together (the CLI's signal handling, the server, the MCP
// server and the worker with the engine).

// binary is the path the e2e tests start the program by: a symbolic link
// named research to this test binary.
var binary string

// testVersion is the version the program reports under the e2e tests, as
// if scripts/release.sh had stamped it with -ldflags -X main.version (the
// unstamped version is cli_test's).
const testVersion = "v9.8.7-e2e"

// programName is the name that makes this test binary the program.
const programName = "research"

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == programName {
		version = testVersion
		os.Exit(Main(os.Args[1:]))
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: the test binary's path:", err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "research-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: temp dir:", err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, programName)
	if err := os.Symlink(self, binary); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// all is stdout and stderr together, for "never shows X" checks.
func (r result) all() string { return r.stdout + "\n" + r.stderr }

func (r result) String() string {
	return fmt.Sprintf("exit %d after %s\n--- stdout:\n%s\n--- stderr:\n%s", r.code, r.elapsed.Round(time.Millisecond), r.stdout, r.stderr)
}

// env is a scrubbed environment: PATH, and HOME, TMPDIR and the XDG
// directories inside a fresh temporary directory, so no real configuration
// or cache is read; plus vars, and the test-speed settings (fast retries).
func env(t testing.TB, vars map[string]string) []string {
	t.Helper()
	home := t.TempDir()
	base := map[string]string{
		"PATH":                      os.Getenv("PATH"),
		"HOME":                      home,
		"TMPDIR":                    filepath.Join(home, "tmp"),
		"XDG_CONFIG_HOME":           filepath.Join(home, "config"),
		"XDG_CACHE_HOME":            filepath.Join(home, "cache"),
		"DEEPGRAPH_RETRY_BACKOFF":   "5ms",
		"DEEPGRAPH_LLM_TIMEOUT":     "20s",
		"DEEPGRAPH_SEARCH_TIMEOUT":  "10s",
		"DEEPGRAPH_FETCH_TIMEOUT":   "10s",
		"DEEPGRAPH_MAX_CONCURRENCY": "8",
		// The fake Gemini's grounding redirects name the real
		// vertexaisearch.cloud.google.com, which tests never reach.
		"DEEPGRAPH_RESOLVE_SOURCES": "false",
		// A race-enabled binary otherwise sleeps 1 s at exit; a race it
		// finds still fails the run (exit status 66).
		"GORACE": "atexit_sleep_ms=0",
	}
	require.NoError(t, os.MkdirAll(base["TMPDIR"], 0o700))
	for k, v := range vars {
		if v == "" {
			delete(base, k)
			continue
		}
		base[k] = v
	}
	out := make([]string, 0, len(base))
	for k, v := range base {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// run runs bin with args in environment envv and waits for it (at most
// 60 s, a safety net that fails the test).
func run(t *testing.T, envv []string, args ...string) result {
	t.Helper()
	return runBin(t, binary, envv, "", args...)
}

func runBin(t *testing.T, bin string, envv []string, dir string, args ...string) result {
	t.Helper()
	return runWith(t, bin, strings.NewReader(""), envv, dir, args...)
}

// runIn runs the binary with stdin.
func runIn(t *testing.T, stdin io.Reader, envv []string, args ...string) result {
	t.Helper()
	return runWith(t, binary, stdin, envv, "", args...)
}

func runWith(t *testing.T, bin string, stdin io.Reader, envv []string, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = envv
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = stdin
	start := time.Now()
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "running %s: %v", bin, err)
		res.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.code = 128 + int(ws.Signal())
		}
	}
	require.NoError(t, ctx.Err(), "the binary did not finish within 60 s:\n%s", res)
	return res
}

// started is a running binary (for signal tests).
type started struct {
	cmd            *exec.Cmd
	stdout, stderr *lockedBuffer
	start          time.Time
}

func startBin(t *testing.T, envv []string, args ...string) *started {
	t.Helper()
	return startBinIn(t, strings.NewReader(""), envv, args...)
}

// startBinIn is startBin with stdin (a terminal, say).
func startBinIn(t *testing.T, stdin io.Reader, envv []string, args ...string) *started {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = envv
	s := &started{cmd: cmd, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}}
	cmd.Stdout, cmd.Stderr = s.stdout, s.stderr
	cmd.Stdin = stdin
	require.NoError(t, cmd.Start())
	s.start = time.Now()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return s
}

// waitStderr waits until stderr contains want.
func (s *started) waitStderr(t *testing.T, want string, within time.Duration) {
	t.Helper()
	s.waitCount(t, want, 1, within)
}

// waitCount waits until stderr holds want n times.
func (s *started) waitCount(t *testing.T, want string, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if strings.Count(s.stderr.String(), want) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("stderr never showed %q %d times within %s:\n%s", want, n, within, s.stderr.String())
}

// wait waits for the process (at most within) and returns its result.
func (s *started) wait(t *testing.T, within time.Duration) result {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		res := result{stdout: s.stdout.String(), stderr: s.stderr.String(), elapsed: time.Since(s.start)}
		if ee, ok := err.(*exec.ExitError); ok {
			res.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				res.code = 128 + int(ws.Signal())
			}
		} else {
			require.NoError(t, err)
		}
		return res
	case <-time.After(within):
		_ = s.cmd.Process.Kill()
		<-done
		t.Fatalf("the binary did not exit within %s:\nstdout:\n%s\nstderr:\n%s", within, s.stdout.String(), s.stderr.String())
		return result{}
	}
}
