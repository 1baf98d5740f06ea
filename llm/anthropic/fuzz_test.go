package anthropic

import (
	"io"
	"strings"
	"testing"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/wiretap"
)

// FuzzStream feeds arbitrary event-stream bodies through the transport's
// stream reader: it must not panic, must only pass on lines it was given,
// and may end cleanly only after message_stop.
func FuzzStream(f *testing.F) {
	f.Add("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\n" +
		"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"response\"}}\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n" +
		"data: {\"type\":\"message_stop\"}\n")
	f.Add("data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\r\n")
	f.Add("data: {\"type\":\"content_block_delta\",\"index\":7,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}")
	f.Add("data: not json\n")
	f.Fuzz(func(t *testing.T, body string) {
		c := newCall(callSpec{stream: true, schemaTool: "response", onDelta: func(llm.Delta) {}})
		tap := wiretap.NewLineTap(io.NopCloser(strings.NewReader(body)), c.streamLine, c.streamEnd)
		out, err := io.ReadAll(tap)
		for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
			if line != "" && !strings.Contains(body, line) {
				t.Fatalf("passed on a line that was not in the body: %q", line)
			}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if err == nil && !c.reply.complete {
			t.Fatalf("a stream without message_stop ended cleanly")
		}
		if err != nil && c.ReplyErr == nil {
			t.Fatalf("stream error %v not recorded", err)
		}
	})
}
