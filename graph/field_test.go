package graph_test

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

type fState struct {
	Name    string         `json:"name"`
	Tags    []string       `json:"tags,omitempty"`
	Counts  map[string]int `json:"counts"`
	Ok      bool
	private int
	Inner   struct{ X int }
}

var (
	fName   = graph.Value(func(s *fState) *string { return &s.Name })
	fTags   = graph.Append(func(s *fState) *[]string { return &s.Tags })
	fCounts = graph.Reduce(func(s *fState) *map[string]int { return &s.Counts }, addCounts)
	fOk     = graph.Value(func(s *fState) *bool { return &s.Ok })
)

func addCounts(cur, upd map[string]int) map[string]int {
	out := maps.Clone(cur)
	if out == nil {
		out = map[string]int{}
	}
	for k, v := range upd {
		out[k] += v
	}
	return out
}

func TestFieldNamesComeFromJSONTagsOrGoNames(t *testing.T) {
	u := graph.Writes(fName.Set("x"), fTags.Add("a"), fCounts.Merge(map[string]int{"k": 1}), fOk.Set(true))
	assert.Equal(t, []string{"name", "tags", "counts", "Ok"}, u.Fields())
}

func TestBadAccessorsPanicWithAClearMessage(t *testing.T) {
	outside := 0
	tests := []struct {
		name string
		mk   func()
		want string
	}{
		{"pointer outside the struct", func() { graph.Value(func(*fState) *int { return &outside }) }, "pointer to a field"},
		{"unexported field", func() { graph.Value(func(s *fState) *int { return &s.private }) }, "not exported"},
		{"nested field", func() { graph.Value(func(s *fState) *int { return &s.Inner.X }) }, "top-level field"},
		{"nil accessor", func() { graph.Value[fState, int](nil) }, "nil"},
		{"state is not a struct", func() { graph.Value(func(s *int) *int { return s }) }, "not a struct"},
		{"nil merge", func() { graph.Reduce(func(s *fState) *bool { return &s.Ok }, nil) }, "merge function is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r, "expected a panic")
				assert.Contains(t, r, tt.want)
			}()
			tt.mk()
		})
	}
}

// oneNode builds Start → node → End over fState.
func oneNode(t *testing.T, fn graph.NodeFunc[fState]) *graph.Compiled[fState] {
	t.Helper()
	g := graph.New[fState](fName, fTags, fCounts, fOk)
	g.AddNode("n", fn)
	g.AddSequence(graph.Start, "n", graph.End)
	c, err := g.Compile()
	require.NoError(t, err)
	return c
}

func TestReducers(t *testing.T) {
	tests := []struct {
		name  string
		in    fState
		write []graph.Write[fState]
		check func(t *testing.T, s fState)
	}{
		{"value replaces", fState{Name: "old"}, []graph.Write[fState]{fName.Set("new")},
			func(t *testing.T, s fState) { assert.Equal(t, "new", s.Name) }},
		{"explicit zero write", fState{Ok: true, Name: "keep"}, []graph.Write[fState]{fOk.Set(false)},
			func(t *testing.T, s fState) { assert.False(t, s.Ok); assert.Equal(t, "keep", s.Name) }},
		{"append appends in order", fState{Tags: []string{"a"}}, []graph.Write[fState]{fTags.Add("b", "c"), fTags.Add("d")},
			func(t *testing.T, s fState) { assert.Equal(t, []string{"a", "b", "c", "d"}, s.Tags) }},
		{"set resets a list", fState{Tags: []string{"a", "b"}}, []graph.Write[fState]{fTags.Set(nil), fTags.Add("c")},
			func(t *testing.T, s fState) { assert.Equal(t, []string{"c"}, s.Tags) }},
		{"reduce merges", fState{Counts: map[string]int{"a": 1}}, []graph.Write[fState]{fCounts.Merge(map[string]int{"a": 2, "b": 1})},
			func(t *testing.T, s fState) { assert.Equal(t, map[string]int{"a": 3, "b": 1}, s.Counts) }},
		{"set bypasses the merge", fState{Counts: map[string]int{"a": 1}}, []graph.Write[fState]{fCounts.Set(map[string]int{"z": 9})},
			func(t *testing.T, s fState) { assert.Equal(t, map[string]int{"z": 9}, s.Counts) }},
		{"no writes keep the state", fState{Name: "n", Tags: []string{"t"}}, nil,
			func(t *testing.T, s fState) { assert.Equal(t, "n", s.Name); assert.Equal(t, []string{"t"}, s.Tags) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := oneNode(t, func(context.Context, fState) (graph.Update[fState], error) { return graph.Writes(tt.write...), nil })
			out, err := c.Invoke(context.Background(), tt.in)
			require.NoError(t, err)
			tt.check(t, out)
		})
	}
}

func TestMergedListsDoNotShareBackingArrays(t *testing.T) {
	// The input's list has spare capacity; appending must not write into the
	// caller's array, and lists handed to nodes must not alias the state.
	backing := make([]string, 1, 8)
	backing[0] = "a"
	var seen []string
	g := graph.New[fState](fTags)
	g.AddNode("one", func(_ context.Context, s fState) (graph.Update[fState], error) {
		_ = append(s.Tags, "scribble") // a careless node appends to its copy
		return graph.Writes(fTags.Add("b")), nil
	})
	g.AddNode("two", func(_ context.Context, s fState) (graph.Update[fState], error) {
		seen = s.Tags
		_ = append(s.Tags, "scribble")
		return graph.Writes(fTags.Add("c")), nil
	})
	g.AddSequence(graph.Start, "one", "two", graph.End)
	c, err := g.Compile()
	require.NoError(t, err)
	out, err := c.Invoke(context.Background(), fState{Tags: backing})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, out.Tags)
	assert.Equal(t, []string{"a", "b"}, seen)
	assert.Equal(t, "", backing[:2][1], "the caller's array was written to")
}

func TestWrittenReadsAnUpdate(t *testing.T) {
	u := graph.Writes(fName.Set("x"), fTags.Add("a"), fTags.Add("b"), fCounts.Merge(map[string]int{"k": 1}))
	name, ok := fName.Written(u)
	assert.True(t, ok)
	assert.Equal(t, "x", name)
	tags, ok := fTags.Written(u)
	assert.True(t, ok)
	assert.Equal(t, []string{"a", "b"}, tags)
	counts, ok := fCounts.Written(u)
	assert.True(t, ok)
	assert.Equal(t, map[string]int{"k": 1}, counts)
	_, ok = fOk.Written(u)
	assert.False(t, ok)
}

func TestUpdateJSON(t *testing.T) {
	u := graph.Writes(fName.Set("x"), fTags.Add("a"), fOk.Set(false)).Goto("next").Send(graph.Send{Node: "task", Arg: 7})
	data, err := json.Marshal(u)
	require.NoError(t, err)
	assert.JSONEq(t, `{"writes":[{"field":"name","op":"set","value":"x"},{"field":"tags","op":"add","value":["a"]},{"field":"Ok","op":"set","value":false}],
		"goto":["next"],"sends":[{"node":"task","arg":7}]}`, string(data))
}
