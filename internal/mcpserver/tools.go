package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepgraph/deepgraph/tools"
)

// addAgentTool offers one of the agent's tools (web_search, fetch_page)
// as it is: its name, description and parameters schema, and its Run, whose
// Result becomes the call's result — Content() as text, images as images,
// a failed Result (Error set) as a tool error. Run validates the arguments
// against the schema itself, strictly, as it does for a model.
func (s *handlers) addAgentTool(srv *mcp.Server, t tools.Tool, title string) {
	name := t.Name()
	srv.AddTool(&mcp.Tool{Name: name, Title: title, Description: t.Description(), InputSchema: t.Parameters(), Annotations: readOnly(title)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := req.Params.Arguments
			if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
				args = json.RawMessage(`{}`)
			}
			ctx, cancel := s.callContext(ctx)
			defer cancel()
			res, err := t.Run(ctx, args)
			if err != nil {
				// An infrastructure failure (a provider down, the call
				// cancelled): the model's agent sees the same words.
				msg := fmt.Sprintf("%s failed: %s", name, s.text(err))
				if ctx.Err() != nil {
					msg = fmt.Sprintf("%s was cancelled", name)
					if context.Cause(ctx) == errShutdown {
						msg = fmt.Sprintf("%s stopped: the server is shutting down", name)
					}
				}
				return errorResult(msg), nil
			}
			return toolResult(res), nil
		})
}

// toolResult maps a tool's Result to an MCP result.
func toolResult(res tools.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: res.Failed(), Content: []mcp.Content{&mcp.TextContent{Text: res.Content()}}}
	for _, img := range res.Images {
		out.Content = append(out.Content, &mcp.ImageContent{Data: img.Data, MIMEType: img.MIMEType})
	}
	return out
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
