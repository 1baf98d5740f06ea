//go:build linux

package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkStart measures what starting the program costs a user: the
// program as go build ./cmd/research builds it (not this test binary, which
// carries the tests, maybe the race detector, and research-temporal's
// packages), started b.N times in a scrubbed environment. Each reports
// ms/op (wall, start to exit), cpu-ms/op (user + system), peak-RSS-MiB (the
// largest of the runs) and binary-MB:
//
//   - version: research version, the least a start does (package init,
//     the command line);
//   - first-line: research "…" against the fake OpenAI and SearXNG, to its
//     first timeline line on stderr (first-line-ms/op), then to its end;
//   - run: one whole research run against the fakes.
//
// go test -run '^$' -bench Start -benchtime 1x ./cmd/research is the short
// form; -benchtime 20x gives the figures to quote. Nothing here asserts a
// time: the figures are read, and compared side by side with a baseline.
func BenchmarkStart(b *testing.B) {
	bin := leanBinary(b)
	fi, err := os.Stat(bin)
	require.NoError(b, err)
	size := float64(fi.Size()) / 1e6

	b.Run("version", func(b *testing.B) {
		envv := env(b, nil)
		startBench(b, size, func() (*os.ProcessState, time.Duration, int64) {
			cmd, peak := measured(b, bin, "version")
			cmd.Env = envv
			out, err := cmd.Output()
			require.NoError(b, err, "%s", out)
			return cmd.ProcessState, 0, peak()
		})
	})
	question := []string{"--model", "openai:gpt-4.1-mini", "--loops", "1", "How does Raft elect a leader?"}
	b.Run("first-line", func(b *testing.B) {
		_, _, _, vars := searchSetup(b)
		envv := env(b, vars)
		startBench(b, size, func() (*os.ProcessState, time.Duration, int64) {
			cmd, peak := measured(b, bin, question...)
			cmd.Env = envv
			stderr, err := cmd.StderrPipe()
			require.NoError(b, err)
			start := time.Now()
			require.NoError(b, cmd.Start())
			r := bufio.NewReader(stderr)
			_, err = r.ReadString('\n')
			first := time.Since(start)
			require.NoError(b, err, "no timeline line")
			_, _ = io.Copy(io.Discard, r)
			require.NoError(b, cmd.Wait())
			return cmd.ProcessState, first, peak()
		})
	})
	b.Run("run", func(b *testing.B) {
		_, _, _, vars := searchSetup(b)
		envv := env(b, vars)
		startBench(b, size, func() (*os.ProcessState, time.Duration, int64) {
			cmd, peak := measured(b, bin, question...)
			cmd.Env = envv
			out, err := cmd.CombinedOutput()
			require.NoError(b, err, "%s", out)
			return cmd.ProcessState, 0, peak()
		})
	})
}

// gnuTime is GNU time, which reports its child's peak RSS.
const gnuTime = "/usr/bin/time"

// measured is the command that starts bin with args, and what gives its
// peak RSS in KiB once it has finished (-1: not known). The kernel's
// figure for a child of this process (ProcessState.SysUsage) cannot serve:
// Go starts children with vfork, so it counts this process's memory too.
// GNU time forks its child from a small process and reports the child's
// own; without it the figure is not reported.
func measured(b *testing.B, bin string, args ...string) (*exec.Cmd, func() int64) {
	if _, err := os.Stat(gnuTime); err != nil {
		return exec.Command(bin, args...), func() int64 { return -1 }
	}
	out := filepath.Join(b.TempDir(), "peak")
	cmd := exec.Command(gnuTime, append([]string{"-f", "%M", "-o", out, bin}, args...)...)
	return cmd, func() int64 {
		data, err := os.ReadFile(out)
		require.NoError(b, err)
		kib, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		require.NoError(b, err, "GNU time wrote %q", data)
		return kib
	}
}

// startBench runs one b.N times and reports its figures; one returns the
// finished process, the time to its first line when it measures one, and
// its peak RSS in KiB (-1: not known).
func startBench(b *testing.B, binaryMB float64, one func() (*os.ProcessState, time.Duration, int64)) {
	b.Helper()
	var cpu, first time.Duration
	var peak int64
	b.ResetTimer()
	for range b.N {
		ps, f, kib := one()
		cpu += ps.UserTime() + ps.SystemTime()
		first += f
		peak = max(peak, kib)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/n, "ms/op")
	b.ReportMetric(float64(cpu.Microseconds())/1e3/n, "cpu-ms/op")
	if first > 0 {
		b.ReportMetric(float64(first.Microseconds())/1e3/n, "first-line-ms/op")
	}
	if peak > 0 {
		b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
	} else {
		b.Log("peak RSS not measured: " + gnuTime + " (GNU time) is not installed")
	}
	b.ReportMetric(binaryMB, "binary-MB")
	b.ReportMetric(0, "ns/op")
}

// leanBuilt is the program built as users build it, next to binary.
var leanBuilt = sync.OnceValues(func() (string, error) {
	out := filepath.Join(filepath.Dir(binary), "built", programName)
	b, err := exec.Command("go", "build", "-o", out, ".").CombinedOutput()
	if err != nil {
		return "", &exec.Error{Name: "go build: " + string(b), Err: err}
	}
	return out, nil
})

// leanBinary builds the program once (a link of the whole program: about
// a minute on 2 cores).
func leanBinary(b *testing.B) string {
	b.Helper()
	bin, err := leanBuilt()
	require.NoError(b, err)
	return bin
}
