// Package checkpointtest is the conformance suite of graph.Checkpointer:
// every store of deepgraph passes it — the in-memory one, SQLite and
// PostgreSQL — and so can a store of your own:
//
//	func TestMyStore(t *testing.T) {
//		checkpointtest.Run(t, func(t *testing.T) graph.Checkpointer {
//			return openMyStore(t) // a fresh, empty store
//		})
//	}
//
// Run checks the contract the engine relies on: checkpoints and task
// records round-trip exactly (in meaning: JSON may be re-encoded), the
// newest checkpoint and List follow insertion order, Put refuses a
// checkpoint whose parent is no longer the newest (optimistic concurrency,
// also under concurrent writers), forks, a later record of a task replaces
// the earlier, threads are isolated and deleted whole — and then runs real
// graphs on the store: resume after a failure, interrupts answered from a
// second graph instance, time travel.
//
// Crash checks durability across processes: it kills a process running a
// graph with SIGKILL in the middle of a parallel step and resumes the run in
// another. CrashDurability checks, with SIGKILL, what each durability mode
// (sync, async, exit) keeps of a run killed mid-step, and that a resume goes
// on from it.
//
// Benchmark measures a store as the engine uses it — the engine's benchmark
// graphs run on it, task records and checkpoints written one by one — with
// the figures deepgraph's own stores report.
package checkpointtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// Run runs the conformance suite. open returns an empty store for one
// subtest; it should register its cleanup with t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) graph.Checkpointer) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s graph.Checkpointer)
	}{
		{"RoundTrip", testRoundTrip},
		{"NewestAndByID", testNewestAndByID},
		{"NotFound", testNotFound},
		{"ListNewestFirst", testList},
		{"ParentMustBeNewest", testParentMustBeNewest},
		{"ConcurrentWritersOneWins", testConcurrentWriters},
		{"Fork", testFork},
		{"DuplicateID", testDuplicateID},
		{"TaskRecords", testTaskRecords},
		{"TaskRecordsReplace", testTaskRecordsReplace},
		{"ConcurrentTaskRecords", testConcurrentTaskRecords},
		{"ThreadsAreIsolated", testThreadsIsolated},
		{"DeleteThread", testDeleteThread},
		{"LargeState", testLargeState},
		{"OddText", testOddText},
		{"ChannelValues", testChannelValues},
		{"Namespaces", testNamespaces},
		{"PutWithRecords", testPutWithRecords},
		{"NoOrphanRecords", testNoOrphanRecords},
		{"Prune", testPrune},
		{"Leases", testLeases},
		{"LeaseExpiry", testLeaseExpiry},
		{"LeaseFencing", testLeaseFencing},
		{"ConcurrentTakers", testConcurrentTakers},
		{"GraphResumeAfterFailure", testGraphResume},
		{"GraphInterruptAcrossInstances", testGraphInterrupt},
		{"GraphTimeTravel", testGraphTimeTravel},
		{"GraphHistory", testGraphHistory},
		{"GraphEditPausedThread", testGraphEditPausedThread},
		{"GraphSubgraphResume", testGraphSubgraphResume},
		{"GraphDurability", testGraphDurability},
		{"GraphNodeCache", testGraphNodeCache},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

// checkpoint builds a checkpoint with every field set.
func checkpoint(thread, id, parent string, step int) *graph.Checkpoint {
	return &graph.Checkpoint{
		Format: graph.CheckpointFormat,
		Thread: thread, ID: id, Parent: parent, Step: step,
		State: json.RawMessage(fmt.Sprintf(`{"n":%d,"items":["a","b"]}`, step)),
		Next: []graph.PendingTask{
			{Node: "plain"},
			{Node: "task", Arg: json.RawMessage(`{"query":"q","id":7}`)},
		},
		Joins:    []graph.JoinProgress{{To: "join", Seen: []string{"x", "y"}}},
		Deferred: []string{"sum"},
		Created:  time.Date(2026, 11, 24, 10, 30, 15, 123456000, time.UTC).Add(time.Duration(step) * time.Second),
		Source:   graph.SourceLoop,
		Ran:      []string{"plain", "task"},
		Run:      "run-1",
	}
}

func put(t *testing.T, s graph.Checkpointer, cp *graph.Checkpoint) {
	t.Helper()
	require.NoError(t, s.Put(ctx(t), cp), "Put %s/%s (parent %q)", cp.Thread, cp.ID, cp.Parent)
}

// equalCheckpoint compares in meaning: JSON may be re-encoded by the store,
// times may lose precision below a microsecond and change zone.
func equalCheckpoint(t *testing.T, want, got *graph.Checkpoint) {
	t.Helper()
	assert.Equal(t, want.Format, got.Format, "Format")
	assert.Equal(t, want.Thread, got.Thread, "Thread")
	assert.Equal(t, want.ID, got.ID, "ID")
	assert.Equal(t, want.Parent, got.Parent, "Parent")
	assert.Equal(t, want.Step, got.Step, "Step")
	assert.JSONEq(t, string(want.State), string(got.State), "State")
	require.Len(t, got.Next, len(want.Next), "Next")
	for i := range want.Next {
		assert.Equal(t, want.Next[i].Node, got.Next[i].Node, "Next[%d].Node", i)
		jsonEqOrEmpty(t, want.Next[i].Arg, got.Next[i].Arg, fmt.Sprintf("Next[%d].Arg", i))
	}
	assert.Equal(t, normJoins(want.Joins), normJoins(got.Joins), "Joins")
	assert.Equal(t, emptyNil(want.Deferred), emptyNil(got.Deferred), "Deferred")
	assert.True(t, want.Created.Truncate(time.Microsecond).Equal(got.Created.Truncate(time.Microsecond)),
		"Created: want %s, got %s", want.Created, got.Created)
	assert.Equal(t, want.Source, got.Source, "Source")
	assert.Equal(t, emptyNil(want.Ran), emptyNil(got.Ran), "Ran")
	assert.Equal(t, want.Run, got.Run, "Run")
}

func jsonEqOrEmpty(t *testing.T, want, got json.RawMessage, what string) {
	t.Helper()
	if len(want) == 0 || string(want) == "null" {
		assert.True(t, len(got) == 0 || string(got) == "null", "%s: want empty, got %s", what, got)
		return
	}
	assert.JSONEq(t, string(want), string(got), what)
}

func normJoins(js []graph.JoinProgress) []graph.JoinProgress {
	if len(js) == 0 {
		return nil
	}
	return js
}

func emptyNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func testRoundTrip(t *testing.T, s graph.Checkpointer) {
	want := checkpoint("rt", "c1", "", 0)
	want.Source = graph.SourceInput
	put(t, s, want)
	got, err := s.Get(ctx(t), graph.Thread("rt").At("c1"))
	require.NoError(t, err)
	equalCheckpoint(t, want, got)
	assert.Empty(t, got.Writes)

	// A checkpoint with nothing optional set.
	bare := &graph.Checkpoint{Format: graph.CheckpointFormat, Thread: "rt", ID: "c2", Parent: "c1", Step: 1,
		State: json.RawMessage(`{}`), Created: time.Now(), Source: graph.SourceLoop}
	put(t, s, bare)
	got, err = s.Get(ctx(t), graph.Thread("rt"))
	require.NoError(t, err)
	equalCheckpoint(t, bare, got)
	assert.True(t, got.Done(), "a checkpoint without Next is done")

	// Put must not keep the caller's slices: changing them later changes
	// nothing stored.
	mut := checkpoint("rt", "c3", "c2", 2)
	put(t, s, mut)
	mut.State[2] = 'X'
	mut.Next[0].Node = "changed"
	got, err = s.Get(ctx(t), graph.Thread("rt").At("c3"))
	require.NoError(t, err)
	equalCheckpoint(t, checkpoint("rt", "c3", "c2", 2), got)
}

func testNewestAndByID(t *testing.T, s graph.Checkpointer) {
	// IDs that sort the other way round from insertion: the newest is the
	// last stored, not the greatest id.
	ids := []string{"z", "m", "a"}
	parent := ""
	for i, id := range ids {
		put(t, s, checkpoint("n", id, parent, i))
		parent = id
		got, err := s.Get(ctx(t), graph.Thread("n"))
		require.NoError(t, err)
		assert.Equal(t, id, got.ID, "newest after storing %s", id)
	}
	for i, id := range ids {
		got, err := s.Get(ctx(t), graph.Thread("n").At(id))
		require.NoError(t, err)
		assert.Equal(t, i, got.Step)
	}
}

func testNotFound(t *testing.T, s graph.Checkpointer) {
	_, err := s.Get(ctx(t), graph.Thread("nobody"))
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound, "missing thread")
	put(t, s, checkpoint("nf", "c1", "", 0))
	_, err = s.Get(ctx(t), graph.Thread("nf").At("c404"))
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound, "missing id")
	list, err := s.List(ctx(t), graph.Thread("nobody"), 0)
	require.NoError(t, err, "List of a missing thread is empty, not an error")
	assert.Empty(t, list)
}

func testList(t *testing.T, s graph.Checkpointer) {
	ids := []string{"k", "b", "x", "c", "a"}
	parent := ""
	for i, id := range ids {
		put(t, s, checkpoint("l", id, parent, i))
		require.NoError(t, s.PutWrites(ctx(t), graph.Thread("l").At(id), "", graph.TaskWrite{Task: 0, Node: "plain", Update: json.RawMessage(`{"id":"` + id + `"}`)}))
		parent = id
	}
	all, err := s.List(ctx(t), graph.Thread("l"), 0)
	require.NoError(t, err)
	var got []string
	for _, cp := range all {
		got = append(got, cp.ID)
		require.Len(t, cp.Writes, 1, "List returns each checkpoint's task records")
		assert.JSONEq(t, `{"id":"`+cp.ID+`"}`, string(cp.Writes[0].Update))
	}
	assert.Equal(t, []string{"a", "c", "x", "b", "k"}, got, "newest first, by insertion")
	two, err := s.List(ctx(t), graph.Thread("l"), 2)
	require.NoError(t, err)
	require.Len(t, two, 2)
	assert.Equal(t, "a", two[0].ID)
	assert.Equal(t, "c", two[1].ID)
	equalCheckpoint(t, checkpoint("l", "c", "x", 3), two[1])

	// Paging: the checkpoints stored before one.
	page, err := s.List(ctx(t), graph.Thread("l").At("x"), 0)
	require.NoError(t, err)
	got = got[:0]
	for _, cp := range page {
		got = append(got, cp.ID)
	}
	assert.Equal(t, []string{"b", "k"}, got, "before x, newest first")
	page, err = s.List(ctx(t), graph.Thread("l").At("c"), 1)
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, "x", page[0].ID)
	_, err = s.List(ctx(t), graph.Thread("l").At("nope"), 0)
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound, "paging from a checkpoint the thread does not have")
}

func testParentMustBeNewest(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("p", "c1", "", 0))

	err := s.Put(ctx(t), checkpoint("p", "c1b", "", 0))
	requireConflict(t, err, "p", "", "c1")

	put(t, s, checkpoint("p", "c2", "c1", 1))
	err = s.Put(ctx(t), checkpoint("p", "c2b", "c1", 1))
	requireConflict(t, err, "p", "c1", "c2")
	err = s.Put(ctx(t), checkpoint("p", "c3", "ghost", 2))
	requireConflict(t, err, "p", "ghost", "c2")

	_, err = s.Get(ctx(t), graph.Thread("p").At("c2b"))
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound, "a refused checkpoint is not stored")
	newest, err := s.Get(ctx(t), graph.Thread("p"))
	require.NoError(t, err)
	assert.Equal(t, "c2", newest.ID)
}

func requireConflict(t *testing.T, err error, thread, parent, newest string) {
	t.Helper()
	require.ErrorIs(t, err, graph.ErrCheckpointConflict)
	var ce *graph.ConflictingCheckpointError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, thread, ce.Thread)
	assert.Equal(t, parent, ce.Parent)
	assert.Equal(t, newest, ce.Newest)
}

func testConcurrentWriters(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("cw", "root", "", 0))
	const writers = 16
	var wg sync.WaitGroup
	var won, lost atomic.Int32
	start := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := s.Put(context.Background(), checkpoint("cw", fmt.Sprintf("w%02d", i), "root", 1))
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, graph.ErrCheckpointConflict):
				lost.Add(1)
			default:
				t.Errorf("writer %d: %v (want nil or a conflict)", i, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int32(1), won.Load(), "exactly one writer continues the thread")
	assert.Equal(t, int32(writers-1), lost.Load())
	list, err := s.List(ctx(t), graph.Thread("cw"), 0)
	require.NoError(t, err)
	assert.Len(t, list, 2, "the root and the winner")
}

func testFork(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("f", "c1", "", 0))
	put(t, s, checkpoint("f", "c2", "c1", 1))
	put(t, s, checkpoint("f", "c3", "c2", 2))
	fork := checkpoint("f", "f1", "c1", 0)
	fork.Source = graph.SourceFork
	put(t, s, fork)
	newest, err := s.Get(ctx(t), graph.Thread("f"))
	require.NoError(t, err)
	assert.Equal(t, "f1", newest.ID, "a fork becomes the newest")
	put(t, s, checkpoint("f", "f2", "f1", 1))
	err = s.Put(ctx(t), checkpoint("f", "c4", "c3", 3))
	require.ErrorIs(t, err, graph.ErrCheckpointConflict, "the old branch cannot be continued as if it were the newest")
	old, err := s.Get(ctx(t), graph.Thread("f").At("c3"))
	require.NoError(t, err, "the old branch is kept")
	assert.Equal(t, "c2", old.Parent)

	ghost := checkpoint("f", "f9", "nowhere", 0)
	ghost.Source = graph.SourceFork
	err = s.Put(ctx(t), ghost)
	require.Error(t, err, "a fork needs an existing parent")
	assert.NotErrorIs(t, err, graph.ErrCheckpointNotFound)
}

func testDuplicateID(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("d", "c1", "", 0))
	put(t, s, checkpoint("d", "c2", "c1", 1))
	dup := checkpoint("d", "c1", "c2", 2)
	require.Error(t, s.Put(ctx(t), dup), "an id is stored once per thread")
	got, err := s.Get(ctx(t), graph.Thread("d").At("c1"))
	require.NoError(t, err)
	assert.Equal(t, 0, got.Step, "the first c1 is kept")
}

func records() []graph.TaskWrite {
	return []graph.TaskWrite{
		{Task: 2, Node: "task", Update: json.RawMessage(`{"writes":[{"field":"items","op":"add","value":["c"]}]}`)},
		{Task: 0, Node: "plain", Interrupts: []graph.PendingInterrupt{
			{ID: "i1", Kind: graph.InterruptNode, Node: "plain", Task: 0, Step: 3, Payload: json.RawMessage(`{"question":"ok?"}`)},
			{ID: "i2", Kind: graph.InterruptNode, Node: "plain/inner", Task: 0, Step: 3, Payload: json.RawMessage(`"second"`)},
		}, Answers: []graph.AnswerRecord{{ID: "i1", Value: json.RawMessage(`{"approve":true}`)}}},
		{Task: 1, Node: "task"}, // released from a breakpoint
	}
}

func equalRecords(t *testing.T, want, got []graph.TaskWrite) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		assert.Equal(t, w.Task, g.Task, "record %d: Task", i)
		assert.Equal(t, w.Node, g.Node, "record %d: Node", i)
		jsonEqOrEmpty(t, w.Update, g.Update, fmt.Sprintf("record %d: Update", i))
		require.Len(t, g.Interrupts, len(w.Interrupts), "record %d: Interrupts", i)
		for j := range w.Interrupts {
			wi, gi := w.Interrupts[j], g.Interrupts[j]
			assert.Equal(t, []any{wi.ID, wi.Kind, wi.Node, wi.Task, wi.Step}, []any{gi.ID, gi.Kind, gi.Node, gi.Task, gi.Step}, "record %d: interrupt %d", i, j)
			jsonEqOrEmpty(t, wi.Payload, gi.Payload, fmt.Sprintf("record %d: interrupt %d payload", i, j))
		}
		require.Len(t, g.Answers, len(w.Answers), "record %d: Answers", i)
		for j := range w.Answers {
			assert.Equal(t, w.Answers[j].ID, g.Answers[j].ID)
			jsonEqOrEmpty(t, w.Answers[j].Value, g.Answers[j].Value, fmt.Sprintf("record %d: answer %d", i, j))
		}
	}
}

func testTaskRecords(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("w", "c1", "", 0))
	put(t, s, checkpoint("w", "c2", "c1", 1))
	recs := records()
	require.NoError(t, s.PutWrites(ctx(t), graph.Thread("w").At("c2"), "", recs...))
	got, err := s.Get(ctx(t), graph.Thread("w").At("c2"))
	require.NoError(t, err)
	equalRecords(t, []graph.TaskWrite{recs[1], recs[2], recs[0]}, got.Writes)
	assert.True(t, got.Writes[2].Finished())
	assert.False(t, got.Writes[0].Finished())
	newest, err := s.Get(ctx(t), graph.Thread("w"))
	require.NoError(t, err)
	assert.Len(t, newest.Writes, 3, "Get of the newest has its records too")

	first, err := s.Get(ctx(t), graph.Thread("w").At("c1"))
	require.NoError(t, err)
	assert.Empty(t, first.Writes, "records belong to one checkpoint")
}

func testTaskRecordsReplace(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("r", "c1", "", 0))
	recs := records()
	require.NoError(t, s.PutWrites(ctx(t), graph.Thread("r").At("c1"), "", recs[1]))
	// The task is answered, runs again and finishes: its record is replaced.
	done := graph.TaskWrite{Task: 0, Node: "plain", Update: json.RawMessage(`{"writes":[]}`)}
	require.NoError(t, s.PutWrites(ctx(t), graph.Thread("r").At("c1"), "", done))
	got, err := s.Get(ctx(t), graph.Thread("r").At("c1"))
	require.NoError(t, err)
	equalRecords(t, []graph.TaskWrite{done}, got.Writes)
}

func testConcurrentTaskRecords(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("cr", "c1", "", 0))
	const tasks = 64
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.PutWrites(context.Background(), graph.Thread("cr").At("c1"), "", graph.TaskWrite{Task: i, Node: "task",
				Update: json.RawMessage(fmt.Sprintf(`{"writes":[{"field":"n","op":"set","value":%d}]}`, i))})
			if err != nil {
				t.Errorf("task %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	got, err := s.Get(ctx(t), graph.Thread("cr").At("c1"))
	require.NoError(t, err)
	require.Len(t, got.Writes, tasks)
	for i, w := range got.Writes {
		assert.Equal(t, i, w.Task, "records come in task order")
		assert.JSONEq(t, fmt.Sprintf(`{"writes":[{"field":"n","op":"set","value":%d}]}`, i), string(w.Update))
	}
}

func testThreadsIsolated(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("t", "c1", "", 0))
	put(t, s, checkpoint("t2", "c1", "", 5))
	put(t, s, checkpoint("t ", "c1", "", 6))
	require.NoError(t, s.PutWrites(ctx(t), graph.Thread("t").At("c1"), "", graph.TaskWrite{Task: 0, Node: "plain", Update: json.RawMessage(`{}`)}))
	a, err := s.Get(ctx(t), graph.Thread("t").At("c1"))
	require.NoError(t, err)
	b, err := s.Get(ctx(t), graph.Thread("t2").At("c1"))
	require.NoError(t, err)
	assert.Equal(t, 0, a.Step)
	assert.Equal(t, 5, b.Step)
	assert.Len(t, a.Writes, 1)
	assert.Empty(t, b.Writes, "same checkpoint id, other thread: no records")
	c, err := s.Get(ctx(t), graph.Thread("t "))
	require.NoError(t, err)
	assert.Equal(t, 6, c.Step, "thread names are compared exactly")
}

func testDeleteThread(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("del", "c1", "", 0))
	put(t, s, checkpoint("del", "c2", "c1", 1))
	require.NoError(t, s.PutWrites(ctx(t), graph.Thread("del").At("c2"), "", records()...))
	put(t, s, checkpoint("keep", "c1", "", 0))
	require.NoError(t, s.DeleteThread(ctx(t), "del"))
	_, err := s.Get(ctx(t), graph.Thread("del"))
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound)
	list, err := s.List(ctx(t), graph.Thread("del"), 0)
	require.NoError(t, err)
	assert.Empty(t, list)
	_, err = s.Get(ctx(t), graph.Thread("keep").At("c1"))
	assert.NoError(t, err, "other threads stay")
	require.NoError(t, s.DeleteThread(ctx(t), "never-existed"), "deleting a missing thread is not an error")

	// The thread can start again from nothing, and none of its old records
	// come back.
	put(t, s, checkpoint("del", "c2", "", 0))
	got, err := s.Get(ctx(t), graph.Thread("del").At("c2"))
	require.NoError(t, err)
	assert.Empty(t, got.Writes)
}

func testLargeState(t *testing.T, s graph.Checkpointer) {
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	cp := checkpoint("big", "c1", "", 0)
	cp.State = json.RawMessage(`{"text":"` + big + `"}`)
	put(t, s, cp)
	got, err := s.Get(ctx(t), graph.Thread("big"))
	require.NoError(t, err)
	var v struct{ Text string }
	require.NoError(t, json.Unmarshal(got.State, &v))
	assert.Equal(t, big, v.Text)
}

func testOddText(t *testing.T, s graph.Checkpointer) {
	// Text a store must keep as written: quotes, SQL, NUL escapes, non-ASCII,
	// and thread and node names that look like syntax.
	thread := `th'read"; DROP TABLE x; --/\%_*`
	state := `{"s":"it's \"quoted\" \u0000 zero, 東京, emoji 🦫, tab\t, </script>"}`
	cp := checkpoint(thread, `id'1`, "", 0)
	cp.State = json.RawMessage(state)
	cp.Next = []graph.PendingTask{{Node: `node'"x`, Arg: json.RawMessage(`"arg with 'quotes'"`)}}
	put(t, s, cp)
	got, err := s.Get(ctx(t), graph.Thread(thread).At(`id'1`))
	require.NoError(t, err)
	equalCheckpoint(t, cp, got)
	var v, w any
	require.NoError(t, json.Unmarshal([]byte(state), &v))
	require.NoError(t, json.Unmarshal(got.State, &w))
	assert.Equal(t, v, w)
	other, err := s.Get(ctx(t), graph.Thread(`th'read`))
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound, "got %v", other)
}
