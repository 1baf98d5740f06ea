package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/sqlite"
)

// A run kept in a file outlives its process: here the run fails in its
// second node, and a second Open of the file — as a new process would do —
// resumes it from its last checkpoint, without running the first node
// again.
func Example() {
	type State struct{ Done []string }
	done := graph.Append(func(s *State) *[]string { return &s.Done })
	build := func(store graph.Checkpointer, fail bool) (*graph.Compiled[State], error) {
		g := graph.New[State](done)
		g.AddNode("search", func(context.Context, State) (graph.Update[State], error) {
			fmt.Println("searching")
			return graph.Writes(done.Add("search")), nil
		})
		g.AddNode("write", func(context.Context, State) (graph.Update[State], error) {
			if fail {
				return graph.Update[State]{}, errors.New("the model is unavailable")
			}
			return graph.Writes(done.Add("write")), nil
		})
		g.AddSequence(graph.Start, "search", "write", graph.End)
		return g.Compile(graph.WithCheckpointer(store))
	}

	dir, err := os.MkdirTemp("", "deepgraph-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "runs.db")
	ctx := context.Background()

	store, err := sqlite.Open(ctx, path)
	if err != nil {
		panic(err)
	}
	run, err := build(store, true)
	if err != nil {
		panic(err)
	}
	_, err = run.Invoke(ctx, State{}, graph.Thread("report-1"))
	fmt.Println("first attempt failed:", err != nil)
	if err := store.Close(); err != nil {
		panic(err)
	}

	store, err = sqlite.Open(ctx, path)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	run, err = build(store, false)
	if err != nil {
		panic(err)
	}
	out, err := run.Resume(ctx, graph.Thread("report-1"))
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Done)
	// Output:
	// searching
	// first attempt failed: true
	// [search write]
}

// A store that may not be written — on a read-only disk, or for a command
// that only reads it — is opened read-only: what it holds can be read, and
// a write is refused.
func ExampleOpenReadOnly() {
	dir, err := os.MkdirTemp("", "deepgraph-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "runs.db")
	ctx := context.Background()

	store, err := sqlite.Open(ctx, path)
	if err != nil {
		panic(err)
	}
	if err := store.Put(ctx, &graph.Checkpoint{Thread: "report-1", ID: "c1", Step: 1, Source: graph.SourceLoop}); err != nil {
		panic(err)
	}
	if err := store.Close(); err != nil {
		panic(err)
	}

	ro, err := sqlite.OpenReadOnly(ctx, path)
	if err != nil {
		panic(err)
	}
	defer ro.Close()
	cp, err := ro.Get(ctx, graph.Ref{Thread: "report-1"})
	if err != nil {
		panic(err)
	}
	fmt.Println("newest checkpoint:", cp.ID, "step", cp.Step)
	err = ro.Put(ctx, &graph.Checkpoint{Thread: "report-1", ID: "c2", Parent: "c1", Step: 2, Source: graph.SourceLoop})
	fmt.Println("write refused:", err != nil)
	// Output:
	// newest checkpoint: c1 step 1
	// write refused: true
}
