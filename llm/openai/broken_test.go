package openai

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

// wholeStream is a complete streamed reply: "Hello", usage, [DONE].
func wholeStream(w http.ResponseWriter) {
	writeSSE(w,
		delta(map[string]any{"role": "assistant", "content": ""}, nil),
		delta(map[string]any{"content": "Hel"}, nil),
		delta(map[string]any{"content": "lo"}, nil),
		delta(map[string]any{}, "stop"),
		usageChunk(9, 3),
		"data: [DONE]\n\n",
	)
}

// Cuts of a 200 stream, as a server or a proxy produces them.
var cuts = []struct {
	name        string
	cut         func(w http.ResponseWriter)
	wantRestart bool // content reached the caller before the cut
}{
	{"body ends without [DONE] or finish_reason", func(w http.ResponseWriter) {
		writeSSE(w, delta(map[string]any{"role": "assistant", "content": ""}, nil), delta(map[string]any{"content": "Hal"}, nil))
	}, true},
	{"connection dropped mid-line", func(w http.ResponseWriter) {
		writeSSE(w, delta(map[string]any{"content": "Hal"}, nil), `data: {"choices":[{"index":0,"delta":{"content":"f`)
		panic(http.ErrAbortHandler) // the server closes the connection without ending the chunked body
	}, true},
	{"connection dropped before any content", func(w http.ResponseWriter) {
		writeSSE(w, delta(map[string]any{"role": "assistant", "content": ""}, nil))
		panic(http.ErrAbortHandler)
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
			assert.Equal(t, llm.Usage{PromptTokens: 9, CompletionTokens: 3, TotalTokens: 12}, resp.Usage)
			want := []llm.Delta{{Content: "Hel"}, {Content: "lo"}}
			if tt.wantRestart {
				want = append([]llm.Delta{{Content: "Hal"}, {Restart: true}}, want...)
			}
			assert.Equal(t, want, deltas, "the observer is told to discard the cut attempt's text")
		})
	}
	wiretest.NoGoroutineRunning(t, "openai-go")
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
			assert.NotErrorIs(t, err, llm.ErrBadRequest)
			var apiErr *llm.APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, "openai", apiErr.Provider)
			assert.Regexp(t, `^openai: the event stream .*; it was cut off on all 3 attempts`, err.Error())
		})
	}
	wiretest.NoGoroutineRunning(t, "openai-go")
}

func TestGenerateBrokenStreamRetriesHonourMaxRetries(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { cuts[0].cut(w) })
	m := newTestModel(t, f, func(c *Config) { c.Client.MaxRetries = -1 })
	_, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")}, llm.OnDelta(func(llm.Delta) {}))
	require.ErrorIs(t, err, llm.ErrStreamBroken)
	assert.Len(t, f.Requests(), 1, "negative MaxRetries: no retry")
}

func TestGenerateStreamErrorEventRetriedWhenTransient(t *testing.T) {
	f := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, attempt int) {
		if attempt == 1 {
			writeSSE(w, map[string]any{"error": map[string]any{"message": "upstream overloaded", "code": 503}})
			return
		}
		wholeStream(w)
	})
	m := newTestModel(t, f, nil)
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")}, llm.OnDelta(func(llm.Delta) {}))
	require.NoError(t, err)
	assert.Equal(t, "Hello", resp.Content)

	bad := wiretest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeSSE(w, map[string]any{"error": map[string]any{"message": "context too long", "code": 400}})
	})
	m = newTestModel(t, bad, nil)
	_, err = m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("hi")}, llm.OnDelta(func(llm.Delta) {}))
	require.ErrorIs(t, err, llm.ErrBadRequest)
	assert.NotErrorIs(t, err, llm.ErrStreamBroken)
	assert.Len(t, bad.Requests(), 1, "a refusal is not retried")
}
