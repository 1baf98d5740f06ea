package anthropic

import (
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deepgraph/deepgraph/llm"
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
		tap := newSSETap(io.NopCloser(strings.NewReader(body)), c.streamLine, c.streamEnd)
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
		if err != nil && c.replyErr == nil {
			t.Fatalf("stream error %v not recorded", err)
		}
	})
}

// FuzzErrorText checks that server error bodies become bounded, printable,
// valid text.
func FuzzErrorText(f *testing.F) {
	f.Add([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key sk-ant-abcdef123456"}}`))
	f.Add([]byte(`{"error":"x","detail":{"a":1}}`))
	f.Add([]byte("\x1b[2J<html>"))
	f.Fuzz(func(t *testing.T, body []byte) {
		msg := cleanText(errorMessage(body), testKey)
		if len(msg) > 900 {
			t.Fatalf("message not bounded: %d bytes", len(msg))
		}
		if utf8.Valid(body) && !utf8.ValidString(msg) {
			t.Fatalf("invalid UTF-8 from valid input: %q", msg)
		}
		for _, r := range msg {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("control character in %q", msg)
			}
		}
	})
}
