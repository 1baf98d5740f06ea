package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/postgres"
)

// A graph whose runs are stored in PostgreSQL: a run paused at an interrupt,
// stopped by a failure or killed with its process continues from its last
// step in any process that opens the same database. (Compiled, not run: it
// needs a server.)
func Example() {
	ctx := context.Background()
	saver, err := postgres.Open(ctx, "postgres://app:secret@db.example.com:5432/app?sslmode=require",
		postgres.WithSchema("agents"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer saver.Close()

	type State struct{ Done []string }
	done := graph.Append(func(s *State) *[]string { return &s.Done })
	g := graph.New[State](done)
	g.AddNode("plan", func(context.Context, State) (graph.Update[State], error) {
		return graph.Writes(done.Add("plan")), nil
	})
	g.AddNode("act", func(context.Context, State) (graph.Update[State], error) {
		return graph.Writes(done.Add("act")), nil
	})
	g.AddSequence(graph.Start, "plan", "act", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(saver))
	if err != nil {
		fmt.Println(err)
		return
	}

	out, err := run.Invoke(ctx, State{}, graph.Thread("ticket-1234"))
	if err != nil {
		// Later, here or in another process, the thread goes on where it
		// stopped.
		out, err = run.Resume(ctx, graph.Thread("ticket-1234"))
	}
	var conflict *graph.ConflictingCheckpointError
	if errors.As(err, &conflict) {
		fmt.Println("another run continued the thread first:", conflict.Newest)
		return
	}
	fmt.Println(out.Done, err)
}

// The checkpoints in the application's own database, sharing its pool: New
// leaves the pool to its owner, and Pool serves the application's tables.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	saver, err := postgres.New(ctx, pool)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer saver.Close() // leaves pool open

	_, err = saver.Pool().Exec(ctx, `CREATE TABLE IF NOT EXISTS tickets (id text PRIMARY KEY, thread text NOT NULL)`)
	fmt.Println(err)
}
