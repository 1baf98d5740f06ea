package anthropic

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/wiretest"
	"github.com/deepgraph/deepgraph/schemas"
)

// wholeStream is a complete streamed reply: "Hello", 25+4 prompt and 15
// completion tokens.
func wholeStream(w http.ResponseWriter) {
	writeEvents(w,
		messageStart(25),
		blockStart(0, map[string]any{"type": "text", "text": ""}),
		textDelta(0, "Hel"),
		textDelta(0, "lo"),
		blockStop(0),
		messageDelta("end_turn", 15),
		messageStop(),
	)
}

// Cuts of a 200 stream, as a server or a proxy produces them. Each starts
// with message_start(10): 10+4 prompt tokens and 1 output token reported.
var cuts = []struct {
	name        string
	cut         func(w http.ResponseWriter)
	wantRestart bool // content reached the caller before the cut
}{
	{"body ends before message_stop", func(w http.ResponseWriter) {
		writeEvents(w, messageStart(10), blockStart(0, map[string]any{"type": "text"}), textDelta(0, "Hal"))
	}, true},
	{"connection dropped mid-line", func(w http.ResponseWriter) {
		writeEvents(w, messageStart(10), blockStart(0, map[string]any{"type": "text"}), textDelta(0, "Hal"),
			"event: content_block_delta\ndata: {\"type\":\"content_bl")
		panic(http.ErrAbortHandler) // the server closes the connection without ending the chunked body
	}, true},
	{"body cut mid-line", func(w http.ResponseWriter) {
		writeEvents(w, messageStart(10), "event: content_block_start\ndata: {\"type\":\"content_bl")
	}, false},
	{"overloaded error event", func(w http.ResponseWriter) {
		writeEvents(w, messageStart(10), map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}})
	}, false},
}

func TestGenerateRetriesABrokenStream(t *testing.T) {
	for _, tt := range cuts {
		t.Run(tt.name, func(t *testing.T) {
			f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, attempt int) {
				if attempt == 1 {
					tt.cut(w)
					return
				}
				wholeStream(w)
			})
			m := newTestModel(t, f, nil)
			var deltas []llm.Delta
			resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")},
				llm.OnDelta(func(d llm.Delta) { deltas = append(deltas, d) }))
			require.NoError(t, err)
			assert.Len(t, f.Requests(), 2)
			assert.Equal(t, "Hello", resp.Content)
			assert.Equal(t, llm.FinishStop, resp.FinishReason)
			// The cut attempt's reported tokens are counted too.
			assert.Equal(t, llm.Usage{PromptTokens: 29 + 14, CompletionTokens: 15 + 1, TotalTokens: 44 + 15, CachedTokens: 4 + 4}, resp.Usage)
			want := []llm.Delta{{Content: "Hel"}, {Content: "lo"}}
			if tt.wantRestart {
				want = append([]llm.Delta{{Content: "Hal"}, {Restart: true}}, want...)
			}
			assert.Equal(t, want, deltas, "the observer is told to discard the cut attempt's text")
		})
	}
	wiretest.NoGoroutineRunning(t, "anthropic-sdk-go")
}

func TestGenerateStreamAlwaysCut(t *testing.T) {
	for _, tt := range cuts {
		t.Run(tt.name, func(t *testing.T) {
			f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { tt.cut(w) })
			m := newTestModel(t, f, nil) // MaxRetries: 2
			resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")}, llm.OnDelta(func(llm.Delta) {}))
			require.Error(t, err)
			assert.Nil(t, resp)
			assert.Len(t, f.Requests(), 3, "the first attempt and MaxRetries more")
			assert.ErrorIs(t, err, llm.ErrStreamBroken)
			assert.ErrorIs(t, err, llm.ErrUnavailable)
			var apiErr *llm.APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, "anthropic", apiErr.Provider)
			assert.Regexp(t, `^anthropic: .*; it was cut off on all 3 attempts`, err.Error())
		})
	}
	wiretest.NoGoroutineRunning(t, "anthropic-sdk-go")
}

func TestGenerateStreamRefusalEventNotRetried(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeEvents(w, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": "prompt is too long"}})
	})
	m := newTestModel(t, f, nil)
	_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")}, llm.OnDelta(func(llm.Delta) {}))
	require.ErrorIs(t, err, llm.ErrBadRequest)
	assert.NotErrorIs(t, err, llm.ErrStreamBroken)
	assert.Len(t, f.Requests(), 1)
}
