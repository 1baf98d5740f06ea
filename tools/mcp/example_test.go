package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/tools/mcp"
)

// A go-sdk server served in process, its tools called through a
// tools.Collection as an agent would.
func Example() {
	ctx := context.Background()
	server := sdk.NewServer(&sdk.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	type greetIn struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}
	sdk.AddTool(server, &sdk.Tool{Name: "greet", Description: "Greets someone by name."},
		func(_ context.Context, _ *sdk.CallToolRequest, in greetIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
		})

	c, err := mcp.Connect(ctx, mcp.Server{Name: "hello"}, mcp.Options{
		// Each connection gets a new in-memory pipe to the server. A
		// configured server uses Command or URL instead.
		Transport: func(ctx context.Context) (sdk.Transport, error) {
			clientEnd, serverEnd := sdk.NewInMemoryTransports()
			if _, err := server.Connect(ctx, serverEnd, nil); err != nil {
				return nil, err
			}
			return clientEnd, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	coll, err := c.Collection(ctx) // tools.Dynamic: what an agent calls at each step
	if err != nil {
		log.Fatal(err)
	}
	greet, _ := coll.Get("hello.greet")
	fmt.Println(coll.Names())
	fmt.Println(greet.Description())
	fmt.Println(greet.Parameters().Properties["name"].Description)

	res, err := coll.Execute(ctx, schemas.ToolCall{ID: "call-1", Name: "hello.greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Output)
	// Output:
	// [hello.greet]
	// [hello] Greets someone by name.
	// who to greet
	// Hello, Ada!
}
