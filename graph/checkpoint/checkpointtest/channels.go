package checkpointtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// sizer is what a store measures itself with, when it can.
type sizer interface {
	StoredBytes(ctx context.Context, thread string) (int64, error)
}

// withValues sets cp's channel versions and the values it introduces.
func withValues(cp *graph.Checkpoint, versions map[string]string, values ...graph.ChannelValue) *graph.Checkpoint {
	cp.Format, cp.State, cp.Versions, cp.Values = graph.CheckpointFormat, nil, versions, values
	return cp
}

func value(channel, version, v string) graph.ChannelValue {
	return graph.ChannelValue{Channel: channel, Version: version, Value: json.RawMessage(v)}
}

// valuesOf returns the values of cp by channel, as "version=value".
func valuesOf(t *testing.T, cp *graph.Checkpoint) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i, cv := range cp.Values {
		if i > 0 {
			assert.Less(t, cp.Values[i-1].Channel, cv.Channel, "values come in channel order")
		}
		var v any
		require.NoError(t, json.Unmarshal(cv.Value, &v), "channel %s", cv.Channel)
		compact, err := json.Marshal(v)
		require.NoError(t, err)
		out[cv.Channel] = cv.Version + "=" + string(compact)
	}
	return out
}

// A checkpoint names a version of each channel; a value is stored once,
// with the checkpoint that introduces it, and every later checkpoint that
// names it reads it back.
func testChannelValues(t *testing.T, s graph.Checkpointer) {
	big := `"` + strings.Repeat("x", 1<<16) + `"`
	put(t, s, withValues(checkpoint("ch", "c1", "", 0), map[string]string{"a": "c1", "b": "c1", graph.RestChannel: "c1"},
		value("a", "c1", `[1,2]`), value("b", "c1", big), value(graph.RestChannel, "c1", `{"q":"?"}`)))
	put(t, s, withValues(checkpoint("ch", "c2", "c1", 1), map[string]string{"a": "c2", "b": "c1", graph.RestChannel: "c1"},
		value("a", "c2", `[1,2,3]`)))
	put(t, s, withValues(checkpoint("ch", "c3", "c2", 2), map[string]string{"a": "c2", "b": "c3", graph.RestChannel: "c1"},
		value("b", "c3", `"short"`)))

	compactBig := `"` + strings.Repeat("x", 1<<16) + `"`
	want := map[string]map[string]string{
		"c1": {"a": "c1=[1,2]", "b": "c1=" + compactBig, graph.RestChannel: `c1={"q":"?"}`},
		"c2": {"a": "c2=[1,2,3]", "b": "c1=" + compactBig, graph.RestChannel: `c1={"q":"?"}`},
		"c3": {"a": "c2=[1,2,3]", "b": `c3="short"`, graph.RestChannel: `c1={"q":"?"}`},
	}
	for id, w := range want {
		got, err := s.Get(ctx(t), graph.Thread("ch").At(id))
		require.NoError(t, err)
		assert.Equal(t, w, valuesOf(t, got), "Get %s", id)
		assert.Equal(t, len(w), len(got.Versions))
		assert.Empty(t, got.State, "a checkpoint of channels has no whole state")
	}
	newest, err := s.Get(ctx(t), graph.Thread("ch"))
	require.NoError(t, err)
	assert.Equal(t, want["c3"], valuesOf(t, newest), "Get of the newest")
	list, err := s.List(ctx(t), graph.Thread("ch"), 0)
	require.NoError(t, err)
	require.Len(t, list, 3)
	for _, cp := range list {
		assert.Equal(t, want[cp.ID], valuesOf(t, cp), "List: %s", cp.ID)
	}
	if sz, ok := s.(sizer); ok {
		n, err := sz.StoredBytes(ctx(t), "ch")
		require.NoError(t, err)
		assert.Less(t, n, int64(2*len(big)), "the large value is stored once, not once per checkpoint")
	}

	// Values of another thread are not shared, even under the same version.
	put(t, s, withValues(checkpoint("ch2", "c1", "", 0), map[string]string{"a": "c1"}, value("a", "c1", `["other"]`)))
	got, err := s.Get(ctx(t), graph.Thread("ch2"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": `c1=["other"]`}, valuesOf(t, got))
	got, err = s.Get(ctx(t), graph.Thread("ch").At("c1"))
	require.NoError(t, err)
	assert.Equal(t, "c1=[1,2]", valuesOf(t, got)["a"])
}

// Each namespace of a thread is a line of checkpoints of its own: its
// newest, its parents, its list; a thread is deleted with all of them.
func testNamespaces(t *testing.T, s graph.Checkpointer) {
	const sub = "review:1f3e"
	in := func(cp *graph.Checkpoint, ns string) *graph.Checkpoint { cp.Namespace = ns; return cp }
	put(t, s, checkpoint("ns", "r1", "", 0))
	put(t, s, in(checkpoint("ns", "s1", "", 0), sub))
	put(t, s, in(checkpoint("ns", "s2", "s1", 1), sub))
	put(t, s, checkpoint("ns", "r2", "r1", 1))
	err := s.Put(ctx(t), in(checkpoint("ns", "s3", "r2", 2), sub))
	requireConflict(t, err, "ns", "r2", "s2")
	err = s.Put(ctx(t), in(checkpoint("ns", "r2", "s2", 2), sub))
	require.Error(t, err, "an id is unique in its thread, whatever the namespace")

	newest, err := s.Get(ctx(t), graph.Thread("ns"))
	require.NoError(t, err)
	assert.Equal(t, "r2", newest.ID)
	assert.Empty(t, newest.Namespace)
	newest, err = s.Get(ctx(t), graph.Thread("ns").In(sub))
	require.NoError(t, err)
	assert.Equal(t, "s2", newest.ID)
	assert.Equal(t, sub, newest.Namespace)
	_, err = s.Get(ctx(t), graph.Thread("ns").At("s1"))
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound, "s1 is not in the thread's own namespace")
	got, err := s.Get(ctx(t), graph.Thread("ns").In(sub).At("s1"))
	require.NoError(t, err)
	assert.Equal(t, 0, got.Step)

	ids := func(ref graph.Ref) []string {
		list, err := s.List(ctx(t), ref, 0)
		require.NoError(t, err)
		var out []string
		for _, cp := range list {
			out = append(out, cp.ID)
		}
		return out
	}
	assert.Equal(t, []string{"r2", "r1"}, ids(graph.Thread("ns")))
	assert.Equal(t, []string{"s2", "s1"}, ids(graph.Thread("ns").In(sub)))
	assert.Empty(t, ids(graph.Thread("ns").In("other:9")))

	require.NoError(t, s.PutWrites(ctx(t), graph.Thread("ns").In(sub).At("s2"), "", graph.TaskWrite{Task: 0, Node: "inner", Update: json.RawMessage(`{}`)}))
	got, err = s.Get(ctx(t), graph.Thread("ns").In(sub))
	require.NoError(t, err)
	assert.Len(t, got.Writes, 1)

	require.NoError(t, s.DeleteThread(ctx(t), "ns"))
	_, err = s.Get(ctx(t), graph.Thread("ns").In(sub))
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound, "DeleteThread deletes every namespace")
}

// Put stores a checkpoint's task records with it, in the same commit; a
// later PutWrites replaces them task by task.
func testPutWithRecords(t *testing.T, s graph.Checkpointer) {
	cp := checkpoint("pr", "c1", "", 0)
	cp.Writes = records()
	put(t, s, cp)
	got, err := s.Get(ctx(t), graph.Thread("pr"))
	require.NoError(t, err)
	recs := records()
	equalRecords(t, []graph.TaskWrite{recs[1], recs[2], recs[0]}, got.Writes)

	done := graph.TaskWrite{Task: 0, Node: "plain", Update: json.RawMessage(`{"writes":[]}`), Interrupts: recs[1].Interrupts, Answers: recs[1].Answers}
	require.NoError(t, s.PutWrites(ctx(t), graph.Thread("pr").At("c1"), "", done))
	got, err = s.Get(ctx(t), graph.Thread("pr"))
	require.NoError(t, err)
	equalRecords(t, []graph.TaskWrite{done, recs[2], recs[0]}, got.Writes)

	bad := checkpoint("pr", "c2", "c1", 1)
	bad.Writes = []graph.TaskWrite{{Task: -1, Node: "x"}}
	require.Error(t, s.Put(ctx(t), bad), "a record that cannot be read back is refused with its checkpoint")
	_, err = s.Get(ctx(t), graph.Thread("pr").At("c2"))
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound)
}

// Task records are kept only for checkpoints the thread has: a late
// PutWrites after the thread was deleted leaves nothing behind.
func testNoOrphanRecords(t *testing.T, s graph.Checkpointer) {
	put(t, s, checkpoint("or", "c1", "", 0))
	err := s.PutWrites(ctx(t), graph.Thread("or").At("c9"), "", graph.TaskWrite{Task: 0, Node: "plain", Update: json.RawMessage(`{}`)})
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound, "records of a checkpoint the thread does not have")
	require.NoError(t, s.DeleteThread(ctx(t), "or"))
	err = s.PutWrites(ctx(t), graph.Thread("or").At("c1"), "", graph.TaskWrite{Task: 0, Node: "plain", Update: json.RawMessage(`{}`)})
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound, "a task finishing after its thread was deleted")
	if sz, ok := s.(sizer); ok {
		n, err := sz.StoredBytes(ctx(t), "or")
		require.NoError(t, err)
		assert.Zero(t, n, "nothing of the deleted thread is left")
	}
	put(t, s, checkpoint("or", "c1", "", 0))
	got, err := s.Get(ctx(t), graph.Thread("or"))
	require.NoError(t, err)
	assert.Empty(t, got.Writes)
}

// Prune deletes the checkpoints its rules select, with their records and
// the values no remaining checkpoint names; the others read back whole.
func testPrune(t *testing.T, s graph.Checkpointer) {
	const sub = "inner:7"
	parent, subParent := "", ""
	for i := range 6 {
		id := fmt.Sprintf("c%d", i)
		cp := withValues(checkpoint("pr", id, parent, i), map[string]string{"big": "c0", "n": id},
			value("n", id, fmt.Sprint(i)))
		if i == 0 {
			cp.Values = append(cp.Values, value("big", "c0", `"`+strings.Repeat("b", 4096)+`"`))
		}
		cp.Run = "run-a"
		if i >= 4 {
			cp.Run = "run-b"
		}
		put(t, s, cp)
		require.NoError(t, s.PutWrites(ctx(t), graph.Thread("pr").At(id), "", graph.TaskWrite{Task: 0, Node: "plain", Update: json.RawMessage(`{}`)}))
		parent = id
		if i%2 == 0 {
			sid := fmt.Sprintf("s%d", i)
			sc := checkpoint("pr", sid, subParent, i)
			sc.Namespace, sc.Run = sub, cp.Run
			put(t, s, sc)
			subParent = sid
		}
	}
	var before int64
	sz, measured := s.(sizer)
	if measured {
		var err error
		before, err = sz.StoredBytes(ctx(t), "pr")
		require.NoError(t, err)
	}
	ids := func(ns string) []string {
		list, err := s.List(ctx(t), graph.Thread("pr").In(ns), 0)
		require.NoError(t, err)
		var out []string
		for _, cp := range list {
			out = append(out, cp.ID)
			assert.Len(t, cp.Writes, map[bool]int{true: 1, false: 0}[ns == ""], "records of %s", cp.ID)
			if ns == "" {
				assert.Equal(t, "c0", valuesOf(t, cp)["big"][:2], "the shared value outlives the checkpoint that introduced it")
			}
		}
		return out
	}

	n, err := s.Prune(ctx(t), "pr", graph.Prune{KeepLast: 3})
	require.NoError(t, err)
	assert.Equal(t, 3, n, "c0, c1, c2; the namespace has 3")
	assert.Equal(t, []string{"c5", "c4", "c3"}, ids(""))
	assert.Equal(t, []string{"s4", "s2", "s0"}, ids(sub))
	if measured {
		after, err := sz.StoredBytes(ctx(t), "pr")
		require.NoError(t, err)
		assert.Less(t, after, before, "pruned checkpoints and their records free their space")
		assert.Greater(t, after, int64(4096), "the shared value is kept")
	}

	// By run: a rollback of run-b.
	n, err = s.Prune(ctx(t), "pr", graph.Prune{Run: "run-b"})
	require.NoError(t, err)
	assert.Equal(t, 3, n, "c4, c5 and s4")
	assert.Equal(t, []string{"c3"}, ids(""))
	assert.Equal(t, []string{"s2", "s0"}, ids(sub))
	newest, err := s.Get(ctx(t), graph.Thread("pr"))
	require.NoError(t, err)
	assert.Equal(t, "c3", newest.ID, "the newest is the last one left")
	put(t, s, withValues(checkpoint("pr", "c6", "c3", 4), map[string]string{"big": "c0", "n": "c3"}))
	require.NoError(t, s.PutWrites(ctx(t), graph.Thread("pr").At("c6"), "", graph.TaskWrite{Task: 0, Node: "plain", Update: json.RawMessage(`{}`)}))

	// By age: never the newest of a namespace.
	n, err = s.Prune(ctx(t), "pr", graph.Prune{Before: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)})
	require.NoError(t, err)
	assert.Equal(t, 2, n, "c3 and s0")
	assert.Equal(t, []string{"c6"}, ids(""))
	assert.Equal(t, []string{"s2"}, ids(sub))

	n, err = s.Prune(ctx(t), "nobody", graph.Prune{KeepLast: 1})
	require.NoError(t, err)
	assert.Zero(t, n)
}
