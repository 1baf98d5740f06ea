package anthropic

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/deepgraph/deepgraph/llm"
)

// FuzzStream feeds arbitrary event-stream bodies through the stream reader:
// it must not panic, and may end cleanly only after message_stop.
func FuzzStream(f *testing.F) {
	f.Add("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"response\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	f.Add("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\r\n\r\n")
	f.Add("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":7,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}")
	f.Add("event: x\ndata: not json\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		raw := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body))}
		p := prepared{schemaTool: "response"}
		resp, err := p.readStream(context.Background(), raw, func(llm.Delta) {})
		if err == nil && !strings.Contains(body, "message_stop") {
			t.Fatalf("a stream without message_stop ended cleanly")
		}
		if err == nil && resp == nil {
			t.Fatalf("no reply and no error")
		}
	})
}
