package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// Environment of the child processes of CrashDurability.
const (
	envDurMode     = "DEEPGRAPH_CRASHDUR_MODE" // the durability mode, by name
	envDurLocation = "DEEPGRAPH_CRASHDUR_LOCATION"
	envDurDir      = "DEEPGRAPH_CRASHDUR_DIR"
	envDurThread   = "DEEPGRAPH_CRASHDUR_THREAD"
)

// durSteps are the nodes of the chain CrashDurability runs, one per step.
var durSteps = []string{"s1", "s2", "s3", "s4", "s5", "s6"}

// durBlock is the node the child never finishes: it is killed in it.
const durBlock = "s4"

// CrashDurability checks with SIGKILL what each durability mode keeps. A
// child process runs a six-step chain: it pauses before s2 (a breakpoint),
// resumes, and is killed while s4 runs, s1 to s3 done. Then the store must
// hold, as the newest checkpoint:
//
//   - DurabilitySync: every finished step — s1, s2 and s3;
//   - DurabilityAsync: all but at most the last finished step — s1 and s2,
//     or s1 to s3;
//   - DurabilityExit: the state at the last pause — s1 — as the resumed
//     run wrote nothing before it returned.
//
// A Resume in this process then runs exactly the steps that were not
// stored, each once, and ends as an uninterrupted run.
//
// The children are the test binary itself, re-running the calling test, so
// call CrashDurability first in its test function. location says where the
// store is — a file path, a DSN — and open opens it, in the parent and in
// the children.
func CrashDurability(t *testing.T, location string, open func(location string) (graph.Checkpointer, error)) {
	if mode := os.Getenv(envDurMode); mode != "" {
		durChild(t, mode, open)
		return
	}
	if testing.Short() {
		t.Skip("the durability crash test starts processes; skipped with -short")
	}
	for _, mode := range []graph.DurabilityMode{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		t.Run(mode.String(), func(t *testing.T) { durCrash(t, location, open, mode) })
	}
}

// durGraph is the chain s1 → … → s6; each node logs "run <node> <pid>"
// before it writes its name to Log; block, when set, never finishes.
func durGraph(store graph.Checkpointer, logPath string, block string) (*graph.Compiled[State], error) {
	var mu sync.Mutex
	logf := func(node string) error {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = fmt.Fprintf(f, "run %s %d\n", node, os.Getpid())
		return err
	}
	g := graph.New[State](fItems, fLog, fNote)
	for _, name := range durSteps {
		g.AddNode(name, func(ctx context.Context, _ State) (graph.Update[State], error) {
			if err := logf(name); err != nil {
				return graph.Update[State]{}, err
			}
			if name == block {
				<-ctx.Done() // running until the process is killed
				return graph.Update[State]{}, ctx.Err()
			}
			return graph.Writes(fLog.Add(name)), nil
		})
	}
	g.AddSequence(append(append([]string{graph.Start}, durSteps...), graph.End)...)
	// A short lease: the killed run's hold on the thread ends soon after
	// the kill, and the resuming run waits for it (BusyEnqueue).
	return g.Compile(graph.WithCheckpointer(store), graph.WithLease(600*time.Millisecond))
}

func parseMode(name string) (graph.DurabilityMode, error) {
	for _, m := range []graph.DurabilityMode{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
		if m.String() == name {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown durability mode %q", name)
}

// durChild pauses before s2, resumes, and blocks in s4 until killed.
func durChild(t *testing.T, modeName string, open func(string) (graph.Checkpointer, error)) {
	mode, err := parseMode(modeName)
	require.NoError(t, err)
	store, err := open(os.Getenv(envDurLocation))
	require.NoError(t, err)
	g, err := durGraph(store, filepath.Join(os.Getenv(envDurDir), "log"), durBlock)
	require.NoError(t, err)
	thread := graph.Thread(os.Getenv(envDurThread))
	_, err = g.Invoke(context.Background(), State{}, thread, graph.PauseBefore("s2"), graph.Durability(mode))
	require.ErrorIs(t, err, graph.ErrInterrupted, "the run pauses before s2")
	_, err = g.Resume(context.Background(), thread, graph.Durability(mode))
	t.Fatalf("the run was to be killed in %s, and it returned: %v", durBlock, err)
}

// durLog reads the log: the nodes that ran, each with its process.
func durLog(t *testing.T, dir string) (nodes []string, pids []int) {
	data, err := os.ReadFile(filepath.Join(dir, "log"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	require.NoError(t, err)
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "run" {
			continue
		}
		pid, err := strconv.Atoi(f[2])
		require.NoError(t, err, "log line %q", line)
		nodes, pids = append(nodes, f[1]), append(pids, pid)
	}
	return nodes, pids
}

func durCrash(t *testing.T, location string, open func(string) (graph.Checkpointer, error), mode graph.DurabilityMode) {
	dir := t.TempDir()
	thread := fmt.Sprintf("crashdur-%s-%d", mode, time.Now().UnixNano())
	store, err := open(location)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.DeleteThread(context.Background(), thread) })

	cmd := startChild(t, dir, "child", envDurMode+"="+mode.String(), envDurLocation+"="+location, envDurDir+"="+dir, envDurThread+"="+thread)
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	childOut := func() string { return childOutput(dir, "child") }
	require.Eventually(t, func() bool {
		nodes, _ := durLog(t, dir)
		return slices.Contains(nodes, durBlock)
	}, 2*time.Minute, 5*time.Millisecond, "the child never reached %s:\n%s", durBlock, childOut())
	require.NoError(t, cmd.Process.Kill()) // SIGKILL
	_ = cmd.Wait()
	killed = true
	ranInChild, _ := durLog(t, dir)
	require.Equal(t, durSteps[:4], ranInChild, "the child ran s1 to s4, each once, and was killed in s4")

	g, err := durGraph(store, filepath.Join(dir, "log"), "")
	require.NoError(t, err)
	snap, err := g.State(context.Background(), graph.Thread(thread))
	require.NoError(t, err)
	kept := snap.State.Log
	switch mode {
	case graph.DurabilitySync:
		assert.Equal(t, []string{"s1", "s2", "s3"}, kept, "sync keeps every finished step")
	case graph.DurabilityAsync:
		assert.Contains(t, [][]string{{"s1", "s2"}, {"s1", "s2", "s3"}}, kept, "async loses at most the last finished step")
	case graph.DurabilityExit:
		assert.Equal(t, []string{"s1"}, kept, "exit keeps the state at the last pause")
	}
	recorded := ""
	if len(snap.Next) == 0 {
		// Async: the last step's task record is stored, and the checkpoint
		// after it is not; State applies the record.
		require.Equal(t, graph.DurabilityAsync, mode, "only async stores a task's record without the checkpoint after its step")
		require.Len(t, snap.Tasks, 1)
		require.True(t, snap.Tasks[0].Done)
		recorded = snap.Tasks[0].Node
		assert.Equal(t, kept[len(kept)-1], recorded, "the record is of the last step kept")
	} else {
		require.Len(t, snap.Next, 1)
		assert.Equal(t, durSteps[len(kept)], snap.Next[0], "the pending step is the first not kept")
	}
	t.Logf("%s: killed in %s; the store kept %v (a task record without its step's checkpoint: %q)", mode, durBlock, kept, recorded)

	final, err := g.Resume(context.Background(), graph.Thread(thread), graph.Durability(mode), graph.OnBusy(graph.BusyEnqueue))
	require.NoError(t, err)
	assert.Equal(t, durSteps, final.Log, "the resumed run ends as an uninterrupted one")
	nodes, pids := durLog(t, dir)
	var resumed []string
	for i, n := range nodes {
		if pids[i] == os.Getpid() {
			resumed = append(resumed, n)
		}
	}
	assert.Equal(t, durSteps[len(kept):], resumed, "the resume ran exactly the steps the store had not kept")
	done, err := g.State(context.Background(), graph.Thread(thread))
	require.NoError(t, err)
	assert.True(t, done.Done())
}
