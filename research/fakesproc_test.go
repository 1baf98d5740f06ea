package research_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// fakesProcessEnv carries the latencies of the fake services to the
// process that serves them (TestFakesProcess).
const fakesProcessEnv = "DEEPGRAPH_BENCH_FAKES"

// fakesSpec is what the fakes' process serves, and where.
type fakesSpec struct {
	Model, Search, Page time.Duration // latencies
}

// fakesProcess is newFakeServices in a process of its own: this test
// binary running TestFakesProcess.
type fakesProcess struct {
	Model, Search string // URLs
	cmd           *exec.Cmd
	stdin         io.WriteCloser
	stopped       bool
}

// startFakesProcess starts the fake model, search engine and pages with
// latencies lat in a child process; the benchmark's end stops it.
func startFakesProcess(b *testing.B, lat latencies) *fakesProcess {
	b.Helper()
	spec, err := json.Marshal(fakesSpec{Model: lat.model, Search: lat.search, Page: lat.page})
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestFakesProcess$", "-test.count", "1")
	cmd.Env = append(os.Environ(), fakesProcessEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	f := &fakesProcess{cmd: cmd, stdin: stdin}
	b.Cleanup(func() { f.stop(b) })
	out := bufio.NewReader(stdout)
	line, err := out.ReadBytes('\n')
	if err != nil {
		b.Fatalf("the fakes' process gave no URLs: %v (%q)", err, line)
	}
	if err := json.Unmarshal(line, f); err != nil || f.Model == "" || f.Search == "" {
		b.Fatalf("the fakes' process gave %q: %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return f
}

// stop ends the fakes' process (its stdin closes) and returns the CPU
// time it used.
func (f *fakesProcess) stop(b *testing.B) time.Duration {
	if f.stopped {
		return 0
	}
	f.stopped = true
	_ = f.stdin.Close()
	if err := f.cmd.Wait(); err != nil {
		b.Errorf("the fakes' process: %v", err)
	}
	ru, ok := f.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestFakesProcess is the fakes' process of the benchmarks that run their
// fake services apart (startFakesProcess): it serves them, prints their
// URLs as a line of JSON and ends when its stdin does.
func TestFakesProcess(t *testing.T) {
	raw := os.Getenv(fakesProcessEnv)
	if raw == "" {
		t.Skip("the fake services' process of BenchmarkConcurrentRuns (" + fakesProcessEnv + " unset)")
	}
	var spec fakesSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	f := newFakeServices(t, latencies{spec.Model, spec.Search, spec.Page})
	urls, err := json.Marshal(struct{ Model, Search string }{f.model.URL, f.search.URL})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(string(urls))
	_, _ = io.Copy(io.Discard, os.Stdin)
}
