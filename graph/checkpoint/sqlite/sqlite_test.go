package sqlite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/checkpointtest"
)

// openTemp opens a new store in a temporary directory, closed at the end of
// the test.
func openTemp(t testing.TB, opts ...Option) *Saver {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "store.db"), opts...)
}

// openAt opens the store at path, closed at the end of the test.
func openAt(t testing.TB, path string, opts ...Option) *Saver {
	t.Helper()
	s, err := Open(context.Background(), path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// checkpoint is a small checkpoint of thread.
func checkpoint(thread, id, parent string, step int) *graph.Checkpoint {
	return &graph.Checkpoint{Format: graph.CheckpointFormat, Thread: thread, ID: id, Parent: parent, Step: step,
		State: json.RawMessage(`{"n":` + strconv.Itoa(step) + `}`), Created: time.Now(), Source: graph.SourceLoop,
		Next: []graph.PendingTask{{Node: "work"}}}
}

// record is the finished record of a task.
func record(task int) graph.TaskWrite {
	return graph.TaskWrite{Task: task, Node: "work", Update: json.RawMessage(`{"writes":[{"field":"n","op":"set","value":` + strconv.Itoa(task) + `}]}`)}
}

func TestConformance(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) graph.Checkpointer { return openTemp(t) })
}

// TestOwnership: runs on one thread through Savers of their own on one file.
func TestOwnership(t *testing.T) {
	checkpointtest.Ownership(t, func(t *testing.T, n int) []graph.Checkpointer {
		path := filepath.Join(t.TempDir(), "shared.db")
		out := make([]graph.Checkpointer, n)
		for i := range out {
			out[i] = openAt(t, path)
		}
		return out
	})
}

func TestCrashSafety(t *testing.T) {
	checkpointtest.Crash(t, filepath.Join(t.TempDir(), "crash.db"), func(location string) (graph.Checkpointer, error) {
		s, err := Open(context.Background(), location)
		if err == nil {
			t.Cleanup(func() { _ = s.Close() })
		}
		return s, err
	})
}

// TestCrashDurability kills runs in each durability mode with SIGKILL and
// checks what the file kept.
func TestCrashDurability(t *testing.T) {
	checkpointtest.CrashDurability(t, filepath.Join(t.TempDir(), "crashdur.db"), func(location string) (graph.Checkpointer, error) {
		s, err := Open(context.Background(), location)
		if err == nil {
			t.Cleanup(func() { _ = s.Close() })
		}
		return s, err
	})
}

// TestSaversRacePut has Savers opened separately on one file — as separate
// processes would — continue the same checkpoint at once: one wins each
// round, the others are refused with the conflict error.
func TestSaversRacePut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	savers := make([]*Saver, 4)
	for i := range savers {
		savers[i] = openAt(t, path)
	}
	ctx := t.Context()
	require.NoError(t, savers[0].Put(ctx, checkpoint("race", "root", "", 0)))
	parent := "root"
	for round := 1; round <= 5; round++ {
		const perSaver = 3
		var wg sync.WaitGroup
		var winners sync.Map
		var lost atomic.Int32
		for i, s := range savers {
			for j := range perSaver {
				wg.Go(func() {
					id := fmt.Sprintf("r%d-s%d-%d", round, i, j)
					err := s.Put(ctx, checkpoint("race", id, parent, round))
					switch {
					case err == nil:
						winners.Store(id, true)
					case errors.Is(err, graph.ErrCheckpointConflict):
						var ce *graph.ConflictingCheckpointError
						if assert.ErrorAs(t, err, &ce) {
							assert.Equal(t, parent, ce.Parent)
						}
						lost.Add(1)
					default:
						t.Errorf("Put %s: %v", id, err)
					}
				})
			}
		}
		wg.Wait()
		var won []string
		winners.Range(func(k, _ any) bool { won = append(won, k.(string)); return true })
		require.Len(t, won, 1, "round %d: exactly one writer continues %s", round, parent)
		assert.Equal(t, int32(len(savers)*perSaver-1), lost.Load())
		for _, s := range savers {
			newest, err := s.Get(ctx, graph.Thread("race"))
			require.NoError(t, err)
			assert.Equal(t, won[0], newest.ID, "every Saver sees the winner")
		}
		parent = won[0]
	}
}

// TestSaversShareAFile has Savers opened separately on one file extend one
// thread and record task outcomes at once: nothing is lost.
func TestSaversShareAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	const writers, each = 4, 15
	setUpShared(t, openAt(t, path))
	var wg sync.WaitGroup
	for i := range writers {
		s := openAt(t, path)
		wg.Go(func() { assert.NoError(t, extend(t.Context(), s, i, each)) })
	}
	wg.Wait()
	checkShared(t, openAt(t, path), writers, each)
}

// Environment of the child processes of TestProcessesShareAFile.
const (
	envChildPath = "DEEPGRAPH_SQLITE_TEST_PATH"
	envChildWho  = "DEEPGRAPH_SQLITE_TEST_WHO"
)

// TestProcessesShareAFile is TestSaversShareAFile with processes: the test
// binary runs this test again as each writer.
func TestProcessesShareAFile(t *testing.T) {
	const writers, each = 3, 15
	if path := os.Getenv(envChildPath); path != "" {
		who, err := strconv.Atoi(os.Getenv(envChildWho))
		require.NoError(t, err)
		require.NoError(t, extend(t.Context(), openAt(t, path), who, each))
		return
	}
	if testing.Short() {
		t.Skip("starts processes; skipped with -short")
	}
	path := filepath.Join(t.TempDir(), "shared.db")
	setUpShared(t, openAt(t, path))
	children := make([]*exec.Cmd, writers)
	outputs := make([]bytes.Buffer, writers)
	for i := range children {
		cmd := exec.Command(os.Args[0], "-test.run=^TestProcessesShareAFile$", "-test.count=1")
		cmd.Env = append(os.Environ(), envChildPath+"="+path, envChildWho+"="+strconv.Itoa(i))
		cmd.Stdout, cmd.Stderr = &outputs[i], &outputs[i]
		require.NoError(t, cmd.Start())
		children[i] = cmd
	}
	for i, cmd := range children {
		require.NoError(t, cmd.Wait(), "writer %d:\n%s", i, outputs[i].String())
	}
	checkShared(t, openAt(t, path), writers, each)
}

func setUpShared(t *testing.T, s *Saver) {
	require.NoError(t, s.Put(t.Context(), checkpoint("shared", "root", "", 0)))
}

// extend adds n checkpoints to the thread "shared", each continuing the
// newest one it reads (again after a conflict), and after each records the
// outcome of a task of its own on the root checkpoint.
func extend(ctx context.Context, s *Saver, who, n int) error {
	for i := 0; i < n; {
		newest, err := s.Get(ctx, graph.Thread("shared"))
		if err != nil {
			return err
		}
		err = s.Put(ctx, checkpoint("shared", fmt.Sprintf("w%d-%d", who, i), newest.ID, newest.Step+1))
		if errors.Is(err, graph.ErrCheckpointConflict) {
			continue
		}
		if err != nil {
			return err
		}
		if err := s.PutWrites(ctx, graph.Thread("shared").At("root"), "", record(who*n+i)); err != nil {
			return err
		}
		i++
	}
	return nil
}

// checkShared checks what writers × extend(each) left: one unbroken chain
// of checkpoints, and every task record.
func checkShared(t *testing.T, s *Saver, writers, each int) {
	list, err := s.List(t.Context(), graph.Thread("shared"), 0)
	require.NoError(t, err)
	require.Len(t, list, writers*each+1, "every checkpoint stored once")
	for i, cp := range list[:len(list)-1] {
		assert.Equal(t, list[i+1].ID, cp.Parent, "checkpoint %s continues the one stored before it: no lost update", cp.ID)
		assert.Equal(t, len(list)-1-i, cp.Step)
	}
	root, err := s.Get(t.Context(), graph.Thread("shared").At("root"))
	require.NoError(t, err)
	require.Len(t, root.Writes, writers*each, "every task record stored")
	for i, w := range root.Writes {
		assert.Equal(t, i, w.Task)
	}
}
