package openai

import (
	"io"
	"strings"
	"testing"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/wiretap"
)

// FuzzStream feeds arbitrary event-stream bodies through the transport's
// stream reader: it must not panic, must only pass on lines it was given,
// and may end cleanly only for a stream that finished.
func FuzzStream(f *testing.F) {
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\ndata: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}]},\"finish_reason\":\"tool_calls\"}]}\n")
	f.Add("data: {\"error\":{\"message\":\"boom\",\"code\":500}}\n\n")
	f.Add(": comment\r\nevent: x\r\ndata:{\"choices\":[{\"delta\":{\"reasoning\":\"r\"}}]}")
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"x\"}}]}}]}\ndata: [DONE]")
	f.Fuzz(func(t *testing.T, body string) {
		c := newCall(callSpec{stream: true, onDelta: func(llm.Delta) {}})
		tap := wiretap.NewLineTap(io.NopCloser(strings.NewReader(body)), c.streamLine, c.streamEnd)
		out, err := io.ReadAll(tap)
		for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
			if line != "" && !strings.Contains(body, strings.TrimSuffix(line, "\r")) {
				t.Fatalf("passed on a line that was not in the body: %q", line)
			}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if err == nil && !c.stream.done && c.stream.finish == "" {
			t.Fatalf("an unfinished stream ended cleanly")
		}
		for _, tc := range c.stream.toolCalls() {
			if len(tc.Arguments) == 0 {
				t.Fatalf("tool call without arguments")
			}
		}
	})
}
