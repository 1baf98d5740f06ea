package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/tools"
)

type waitArgs struct {
	Seconds int `json:"seconds" jsonschema:"How long to wait."`
}

// Every call a collection runs is bounded: DefaultCallTimeout unless the
// collection (WithCallTimeout) or the tool (WithTimeout) says otherwise.
func ExampleCollection_WithCallTimeout() {
	wait := tools.MustFunc("wait", "Waits.", func(ctx context.Context, a waitArgs) (tools.Result, error) {
		select {
		case <-time.After(time.Duration(a.Seconds) * time.Second):
			return tools.Text("waited"), nil
		case <-ctx.Done():
			return tools.Result{}, ctx.Err()
		}
	})
	c, _ := tools.NewCollection(wait)
	c = c.WithCallTimeout(50 * time.Millisecond)

	res, err := c.Execute(context.Background(), schemas.ToolCall{ID: "1", Name: "wait", Arguments: json.RawMessage(`{"seconds":60}`)})
	fmt.Println(res.Content(), err)
	// Output:
	// Error: wait did not finish within 50ms and was stopped; try a smaller step, or another way <nil>
}

// A tool that waits for a person, or bounds itself, opts out of the
// collection's bound.
func ExampleWithTimeout() {
	confirm := tools.MustFunc("confirm", "Asks the user to confirm.", func(ctx context.Context, _ struct{}) (tools.Result, error) {
		_, bounded := ctx.Deadline()
		return tools.Text(fmt.Sprint("bounded: ", bounded)), nil
	})
	c, _ := tools.NewCollection(tools.WithTimeout(confirm, 0))
	res, _ := c.Execute(context.Background(), schemas.ToolCall{ID: "1", Name: "confirm", Arguments: json.RawMessage(`{}`)})
	fmt.Println(res.Content())
	// Output:
	// bounded: false
}

func ExampleCheckWorkspace() {
	err := tools.CheckWorkspace("/etc")
	fmt.Println(errors.Is(err, tools.ErrUnsafeWorkspace))
	var we *tools.WorkspaceError
	if errors.As(err, &we) {
		fmt.Println(we.What)
	}
	// Output:
	// true
	// a system directory
}
