package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// envServer, set to "stdio", makes the test binary an MCP server on its
// stdin and stdout (TestMain), for the tests of stdio servers.
const envServer = "DEEPGRAPH_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(envServer) == "stdio" {
		ts := newTestServer(true)
		if err := ts.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// stdioServer is the test binary run as a stdio MCP server.
func stdioServer(name string) Server {
	return Server{Name: name, Command: os.Args[0], Env: map[string]string{envServer: "stdio"}}
}

// tinyPNG is a 1×1 PNG.
var tinyPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// testServer is a go-sdk server with one tool per behaviour under test.
// Its channels report, in process, what the tools saw.
type testServer struct {
	*sdk.Server
	started   chan string // a call of sleep began
	cancelled chan string // a call of sleep saw its context end
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type sumIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type sumOut struct {
	Sum int `json:"sum"`
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func newTestServer(stdio bool) *testServer {
	ts := &testServer{
		Server:    sdk.NewServer(&sdk.Implementation{Name: "test-server", Version: "1"}, nil),
		started:   make(chan string, 10),
		cancelled: make(chan string, 10),
	}
	s := ts.Server
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes text."}, func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return text("echo: " + in.Text), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "sum", Description: "Adds a and b.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(_ context.Context, _ *sdk.CallToolRequest, in sumIn) (*sdk.CallToolResult, sumOut, error) {
		return nil, sumOut{Sum: in.A + in.B}, nil
	})
	obj := &jsonschema.Schema{Type: "object"}
	s.AddTool(&sdk.Tool{Name: "structured_only", Description: "Structured content, no text.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"temperature": 21, "unit": "C"}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "image", Description: "A picture.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a pixel:"},
				&sdk.ImageContent{MIMEType: "image/png", Data: tinyPNG},
			}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "resources", Description: "Links and embedded resources.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.ResourceLink{URI: "https://example.com/report", Name: "report", Description: "the yearly report"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "remember the milk"}},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///data.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}},
			}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "fail", Description: "Fails.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk full"}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "sleep", Description: "Waits until cancelled.", InputSchema: obj},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			ts.started <- "sleep"
			<-ctx.Done()
			ts.cancelled <- "sleep"
			return nil, ctx.Err()
		})
	s.AddTool(&sdk.Tool{Name: "add_tool", Description: "Adds the tool late.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			sdk.AddTool(s, &sdk.Tool{Name: "late", Description: "Added at run time."}, func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
				return text("late: " + in.Text), nil, nil
			})
			return text("added"), nil
		})
	s.AddTool(&sdk.Tool{Name: "remove_echo", Description: "Removes echo.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			s.RemoveTools("echo")
			return text("removed"), nil
		})
	s.AddTool(&sdk.Tool{Name: "bad schema", Description: "A name with a space and a schema that does not resolve.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "#/definitions/missing"}}}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("ok"), nil })
	s.AddTool(&sdk.Tool{Name: strings.Repeat("very_long_tool_name_", 4), Description: "A long name.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("long"), nil })
	if stdio {
		s.AddTool(&sdk.Tool{Name: "crash", Description: "Exits with status 3.", InputSchema: obj},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				fmt.Fprintln(os.Stderr, "crashing on purpose")
				os.Exit(3)
				return nil, nil
			})
		s.AddTool(&sdk.Tool{Name: "pid", Description: "The server's process id.", InputSchema: obj},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return text(fmt.Sprint(os.Getpid())), nil
			})
		s.AddTool(&sdk.Tool{Name: "spawn", Description: "Starts a child that sleeps; returns its pid.", InputSchema: obj},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				cmd := exec.Command("sleep", "300")
				if err := cmd.Start(); err != nil {
					return nil, err
				}
				return text(fmt.Sprint(cmd.Process.Pid)), nil
			})
		s.AddTool(&sdk.Tool{Name: "env", Description: "An environment variable.", InputSchema: &jsonschema.Schema{
			Type: "object", Properties: map[string]*jsonschema.Schema{"name": {Type: "string"}}, Required: []string{"name"}}},
			func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				var in struct{ Name string }
				_ = json.Unmarshal(req.Params.Arguments, &in)
				v, ok := os.LookupEnv(in.Name)
				return text(fmt.Sprintf("%v %s", ok, v)), nil
			})
	}
	return ts
}
