package openai

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/deepgraph/deepgraph/llm"
)

// FuzzStream feeds arbitrary event-stream bodies through the stream reader:
// it must not panic, may end cleanly only for a stream that finished, and
// every tool call it returns has arguments.
func FuzzStream(f *testing.F) {
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\ndata: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}]},\"finish_reason\":\"tool_calls\"}]}\n\n")
	f.Add("data: {\"error\":{\"message\":\"boom\",\"code\":500}}\n\n")
	f.Add(": comment\r\nevent: x\r\ndata:{\"choices\":[{\"delta\":{\"reasoning\":\"r\"}}]}")
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"g\",\"arguments\":\"x\"}}]}}]}\n\ndata: [DONE]\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		raw := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body))}
		resp, err := readStream(context.Background(), raw, llm.ToolNames{}, func(llm.Delta) {})
		if err != nil {
			return
		}
		if !strings.Contains(body, "[DONE]") && !strings.Contains(body, "finish_reason") {
			t.Fatalf("an unfinished stream ended cleanly")
		}
		for _, tc := range resp.ToolCalls {
			if len(tc.Arguments) == 0 || tc.Name == "" || tc.ID == "" {
				t.Fatalf("incomplete tool call %+v", tc)
			}
		}
	})
}
