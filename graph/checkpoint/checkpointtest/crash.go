package checkpointtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// Environment of the child processes of Crash.
const (
	envRole     = "DEEPGRAPH_CRASHTEST_ROLE" // "run" or "resume"
	envLocation = "DEEPGRAPH_CRASHTEST_LOCATION"
	envDir      = "DEEPGRAPH_CRASHTEST_DIR"
	envThread   = "DEEPGRAPH_CRASHTEST_THREAD"
	envBlock    = "DEEPGRAPH_CRASHTEST_BLOCK" // run: tasks of these items never finish
)

// Crash proves that the store makes runs crash-safe across processes. It
// runs a graph in a child process, kills the child with SIGKILL in the middle
// of a parallel step — some tasks finished, some still running — resumes the
// run in a new process, and checks from an execution log that no task whose
// outcome was stored ran twice, that the others ran again, and that the
// final state equals an uninterrupted run's. A second scenario kills runs of
// a several-round graph at random moments, three times.
//
// The children are the test binary itself, re-running the calling test, so
// call Crash first in its test function. location says where the store is —
// a file path, a DSN — and open opens it, in the parent and in the children.
func Crash(t *testing.T, location string, open func(location string) (graph.Checkpointer, error)) {
	if role := os.Getenv(envRole); role != "" {
		crashChild(t, role, open)
		return
	}
	if testing.Short() {
		t.Skip("the crash test starts processes; skipped with -short")
	}
	t.Run("KillMidStep", func(t *testing.T) { crashMidStep(t, location, open) })
	t.Run("KillAtRandom", func(t *testing.T) {
		for i := range 3 {
			crashAtRandom(t, location, open, i)
		}
	})
}

// crashGraph is split → work × items → join, for rounds rounds. Work tasks
// log their start and end to logPath; the items in block never finish.
func crashGraph(store graph.Checkpointer, logPath string, rounds int, items []string, block []string, delay func() time.Duration) (*graph.Compiled[State], error) {
	var mu sync.Mutex
	logf := func(format string, args ...any) error {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = fmt.Fprintf(f, format+"\n", args...)
		return err
	}
	pid := os.Getpid()
	g := graph.New[State](fItems, fLog, fNote)
	g.AddNode("split", func(_ context.Context, s State) (graph.Update[State], error) {
		return graph.Writes(fLog.Add(fmt.Sprintf("split %d", len(s.Log)/2+1))), nil
	})
	graph.AddTask(g, "work", func(ctx context.Context, item string) (graph.Update[State], error) {
		if err := logf("start %s %d", item, pid); err != nil {
			return graph.Update[State]{}, err
		}
		name := item[strings.IndexByte(item, ':')+1:]
		if slices.Contains(block, name) {
			<-ctx.Done() // running until the process is killed
			return graph.Update[State]{}, ctx.Err()
		}
		if d := delay(); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return graph.Update[State]{}, ctx.Err()
			}
		}
		if err := logf("end %s %d", item, pid); err != nil {
			return graph.Update[State]{}, err
		}
		return graph.Writes(fItems.Add(item)), nil
	})
	g.AddNode("join", func(_ context.Context, s State) (graph.Update[State], error) {
		return graph.Writes(fLog.Add(fmt.Sprintf("join %d", len(s.Items)))), nil
	})
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(s State) []string {
		round := len(s.Log)/2 + 1
		out := make([]string, len(items))
		for i, it := range items {
			out[i] = fmt.Sprintf("r%d:%s", round, it)
		}
		return out
	})
	g.AddEdge("work", "join")
	g.AddConditional("join", func(s State) graph.Route {
		if len(s.Log)/2 >= rounds {
			return graph.Goto(graph.End)
		}
		return graph.Goto("split")
	}, "split", graph.End)
	// A short lease: the killed run's hold on the thread ends soon after
	// the kill, and the resuming run waits for it (BusyEnqueue).
	return g.Compile(graph.WithCheckpointer(store), graph.WithLease(600*time.Millisecond))
}

// crashSpec is what a child needs to rebuild the graph.
type crashSpec struct {
	Rounds  int      `json:"rounds"`
	Items   []string `json:"items"`
	DelayMS int      `json:"delay_ms"` // most random delay of a task
}

func crashChild(t *testing.T, role string, open func(string) (graph.Checkpointer, error)) {
	dir, thread := os.Getenv(envDir), os.Getenv(envThread)
	var spec crashSpec
	data, err := os.ReadFile(filepath.Join(dir, "spec.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &spec))
	store, err := open(os.Getenv(envLocation))
	require.NoError(t, err)
	var block []string
	if role == "run" && os.Getenv(envBlock) != "" {
		block = strings.Split(os.Getenv(envBlock), ",")
	}
	g, err := crashGraph(store, filepath.Join(dir, "log"), spec.Rounds, spec.Items, block, randomDelay(spec.DelayMS))
	require.NoError(t, err)
	var out State
	switch role {
	case "run":
		out, err = g.Invoke(context.Background(), State{}, graph.Thread(thread))
	case "resume":
		out, err = g.Resume(context.Background(), graph.Thread(thread), graph.OnBusy(graph.BusyEnqueue))
	default:
		t.Fatalf("unknown crash test role %q", role)
	}
	require.NoError(t, err)
	result, err := json.Marshal(out)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "result.json"), result, 0o644))
}

func randomDelay(most int) func() time.Duration {
	return func() time.Duration {
		if most <= 0 {
			return 0
		}
		return time.Duration(rand.IntN(most)) * time.Millisecond
	}
}

// child starts the test binary running this test in role.
func child(t *testing.T, role, location, dir, thread, block string) *exec.Cmd {
	return startChild(t, dir, role, envRole+"="+role, envLocation+"="+location, envDir+"="+dir, envThread+"="+thread, envBlock+"="+block)
}

// startChild starts the test binary running this test's top-level test —
// which acts as the child when it finds its variables in env — with its
// output in dir/name.out (childOutput).
func startChild(t *testing.T, dir, name string, env ...string) *exec.Cmd {
	pattern := "^" + regexp.QuoteMeta(strings.Split(t.Name(), "/")[0]) + "$"
	cmd := exec.Command(os.Args[0], "-test.run="+pattern, "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), env...)
	out, err := os.Create(filepath.Join(dir, name+".out"))
	require.NoError(t, err)
	t.Cleanup(func() { out.Close() })
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	return cmd
}

func childOutput(dir, role string) string {
	b, _ := os.ReadFile(filepath.Join(dir, role+".out"))
	return string(b)
}

func setupCrash(t *testing.T, location string, open func(string) (graph.Checkpointer, error), spec crashSpec) (dir, thread string, store graph.Checkpointer) {
	dir = t.TempDir()
	thread = fmt.Sprintf("crash-%d-%x", time.Now().UnixNano(), rand.Uint32())
	data, err := json.Marshal(spec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "spec.json"), data, 0o644))
	store, err = open(location)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.DeleteThread(context.Background(), thread) })
	return dir, thread, store
}

// logEntry is one line of the execution log.
type logEntry struct {
	event, item string
	pid         int
}

func readLog(t *testing.T, dir string) []logEntry {
	f, err := os.Open(filepath.Join(dir, "log"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []logEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e logEntry
		if _, err := fmt.Sscanf(sc.Text(), "%s %s %d", &e.event, &e.item, &e.pid); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// uninterrupted runs the same graph in this process without a crash.
func uninterrupted(t *testing.T, spec crashSpec) State {
	g, err := crashGraph(graph.NewMemorySaver(), filepath.Join(t.TempDir(), "log"), spec.Rounds, spec.Items, nil, randomDelay(spec.DelayMS))
	require.NoError(t, err)
	out, err := g.Invoke(t.Context(), State{}, graph.Thread("reference"))
	require.NoError(t, err)
	return out
}

func finishResume(t *testing.T, location, dir, thread string, want State) {
	resume := child(t, "resume", location, dir, thread, "")
	err := resume.Wait()
	require.NoError(t, err, "the resuming process failed:\n%s", childOutput(dir, "resume"))
	data, err := os.ReadFile(filepath.Join(dir, "result.json"))
	require.NoError(t, err)
	var got State
	require.NoError(t, json.Unmarshal(data, &got))
	assert.Equal(t, want, got, "the resumed run ends as an uninterrupted one")
}

func crashMidStep(t *testing.T, location string, open func(string) (graph.Checkpointer, error)) {
	spec := crashSpec{Rounds: 1, Items: []string{"a", "b", "c", "d", "e", "f", "g", "h"}}
	dir, thread, store := setupCrash(t, location, open, spec)
	blocked := []string{"b", "e", "g", "h"}
	run := child(t, "run", location, dir, thread, strings.Join(blocked, ","))
	killed := false
	defer func() {
		if !killed {
			_ = run.Process.Kill()
			_ = run.Wait()
		}
	}()

	// Wait until the four other tasks' outcomes are stored and the blocked
	// four are running.
	var finished []int
	require.Eventually(t, func() bool {
		cp, err := store.Get(context.Background(), graph.Thread(thread))
		if err != nil || len(cp.Next) != len(spec.Items) {
			return false
		}
		finished = finishedTasks(cp)
		started := 0
		for _, e := range readLog(t, dir) {
			if e.event == "start" {
				started++
			}
		}
		return len(finished) == 4 && started == len(spec.Items)
	}, 60*time.Second, 10*time.Millisecond, "the child did not reach the middle of its parallel step:\n%s", childOutput(dir, "run"))
	require.NoError(t, run.Process.Kill()) // SIGKILL
	_ = run.Wait()
	killed = true
	assert.Equal(t, []int{0, 2, 3, 5}, finished, "a, c, d and f finished")

	finishResume(t, location, dir, thread, uninterrupted(t, spec))

	starts := map[string][]int{}
	for _, e := range readLog(t, dir) {
		if e.event == "start" {
			starts[e.item] = append(starts[e.item], e.pid)
		}
	}
	for i, it := range spec.Items {
		key := "r1:" + it
		if slices.Contains(finished, i) {
			assert.Len(t, starts[key], 1, "%s finished before the kill and must not run again", key)
		} else {
			require.Len(t, starts[key], 2, "%s was running at the kill and runs again", key)
			assert.NotEqual(t, starts[key][0], starts[key][1], "in another process")
		}
	}
}

func finishedTasks(cp *graph.Checkpoint) []int {
	var out []int
	for _, w := range cp.Writes {
		if w.Finished() {
			out = append(out, w.Task)
		}
	}
	return out
}

func crashAtRandom(t *testing.T, location string, open func(string) (graph.Checkpointer, error), attempt int) {
	spec := crashSpec{Rounds: 4, Items: []string{"a", "b", "c", "d", "e", "f"}, DelayMS: 40}
	dir, thread, store := setupCrash(t, location, open, spec)
	run := child(t, "run", location, dir, thread, "")
	// Kill once the run is under way, somewhere in its rounds.
	require.Eventually(t, func() bool { return len(readLog(t, dir)) > 0 }, 60*time.Second, 5*time.Millisecond,
		"the child never started:\n%s", childOutput(dir, "run"))
	time.Sleep(time.Duration(20+rand.IntN(120)) * time.Millisecond)
	_ = run.Process.Kill()
	_ = run.Wait()

	// What the store holds: every task of a completed step, and the
	// finished tasks of the pending one.
	committed := map[string]bool{}
	cps, err := store.List(context.Background(), graph.Thread(thread), 0)
	require.NoError(t, err)
	for i, c := range cps {
		cp, err := store.Get(context.Background(), graph.Thread(thread).At(c.ID))
		require.NoError(t, err)
		for ti, pt := range cp.Next {
			if pt.Node != "work" {
				continue
			}
			var item string
			require.NoError(t, json.Unmarshal(pt.Arg, &item))
			if i > 0 || slices.ContainsFunc(cp.Writes, func(w graph.TaskWrite) bool { return w.Task == ti && w.Finished() }) {
				committed[item] = true
			}
		}
	}
	before := readLog(t, dir)
	if len(cps) > 0 && cps[0].Done() {
		t.Logf("attempt %d: the run finished before the kill; nothing to resume", attempt)
		return
	}
	finishResume(t, location, dir, thread, uninterrupted(t, spec))
	t.Logf("attempt %d: killed with %d task outcomes stored, %d log lines", attempt, len(committed), len(before))

	starts := map[string]int{}
	for _, e := range readLog(t, dir) {
		if e.event == "start" {
			starts[e.item]++
		}
	}
	for item := range committed {
		assert.Equal(t, 1, starts[item], "%s was stored before the kill and must not run again", item)
	}
	for item, n := range starts {
		assert.LessOrEqual(t, n, 2, "%s ran more than once per process", item)
	}
}
