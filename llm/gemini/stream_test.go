package gemini

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
)

// collect returns an OnDelta option and the deltas it received.
func collect() (llm.Option, *[]llm.Delta) {
	var got []llm.Delta
	return llm.OnDelta(func(d llm.Delta) { got = append(got, d) }), &got
}

func TestGenerateStream(t *testing.T) {
	const usage = `{"promptTokenCount":9,"candidatesTokenCount":6,"thoughtsTokenCount":4,"totalTokenCount":19}`
	metadata := fmt.Sprintf(`{"webSearchQueries":["award"],"groundingChunks":[{"web":{"uri":"https://a.example/","title":"a.example"}}],`+
		`"groundingSupports":[{"segment":{"partIndex":1,"startIndex":%d,"endIndex":%d,"text":"Müller won."},"groundingChunkIndices":[0]}]}`,
		len("Café "), len("Café Müller won."))
	chunks := []string{
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"**Plan**","thought":true}]}}],"modelVersion":"gemini-2.5-flash-001"}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Café "}]}}],"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash-001"}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Müller won."}]}}],"modelVersion":"gemini-2.5-flash-001"}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","groundingMetadata":` + metadata + `}],` +
			`"usageMetadata":` + usage + `,"modelVersion":"gemini-2.5-flash-001"}`,
	}
	unary := `{"candidates":[{"content":{"role":"model","parts":[{"text":"**Plan**","thought":true},{"text":"Café Müller won."}]},` +
		`"finishReason":"STOP","groundingMetadata":` + metadata + `}],"usageMetadata":` + usage + `,"modelVersion":"gemini-2.5-flash-001"}`

	f := newFake(t, sse(chunks...), reply(http.StatusOK, unary))
	m := f.model(t, Config{IncludeThoughts: true})
	msgs := []schemas.Message{schemas.UserMessage("Who won?")}
	onDelta, deltas := collect()
	streamed, err := m.Generate(context.Background(), msgs, onDelta, llm.GoogleSearch())
	require.NoError(t, err)
	assert.Equal(t, []llm.Delta{{Reasoning: "**Plan**"}, {Content: "Café "}, {Content: "Müller won."}}, *deltas)

	reqs := f.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "/v1beta/models/gemini-2.5-flash:streamGenerateContent", reqs[0].Path)
	assert.Equal(t, "alt=sse", reqs[0].Query)
	assert.Equal(t, testKey, reqs[0].Header.Get("x-goog-api-key"))
	assertJSON(t, `[{"googleSearch":{}}]`, reqs[0].wire(t).Tools, "tools")

	assert.Equal(t, "Café Müller won.", streamed.Content)
	assert.Equal(t, []string{"Café Müller won."}, streamed.Parts)
	assert.Equal(t, "**Plan**", streamed.Reasoning)
	assert.Equal(t, llm.FinishStop, streamed.FinishReason)
	assert.Equal(t, llm.Usage{PromptTokens: 9, CompletionTokens: 6, ReasoningTokens: 4, TotalTokens: 19}, streamed.Usage, "usage of the last chunk")
	assert.Equal(t, "gemini-2.5-flash-001", streamed.Model)
	require.NotNil(t, streamed.Grounding)
	require.Len(t, streamed.Grounding.Supports, 1)
	s := streamed.Grounding.Supports[0]
	assert.Equal(t, "Müller won.", streamed.Parts[s.PartIndex][s.StartIndex:s.EndIndex])

	whole, err := m.Generate(context.Background(), msgs, llm.GoogleSearch())
	require.NoError(t, err)
	assert.Equal(t, whole, streamed, "streaming returns what a unary call returns")
}

func TestGenerateStreamToolCalls(t *testing.T) {
	f := newFake(t, sse(
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Checking "}]}}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"both."},{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2lnLTE="}]}}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"fc-2","name":"get_weather","args":{"city":"Rome"}}}]},"finishReason":"STOP"}],`+
			`"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":10,"totalTokenCount":30}}`,
	))
	onDelta, deltas := collect()
	resp, err := f.model(t, Config{}).Generate(context.Background(), []schemas.Message{schemas.UserMessage("Paris and Rome?")},
		onDelta, llm.Tools(weatherTools()...))
	require.NoError(t, err)
	assert.Equal(t, []llm.Delta{{Content: "Checking "}, {Content: "both."}}, *deltas)
	assert.Equal(t, "Checking both.", resp.Content)
	assert.Equal(t, llm.FinishToolCalls, resp.FinishReason)
	require.Len(t, resp.ToolCalls, 2)
	assert.Equal(t, []byte("sig-1"), resp.ToolCalls[0].Signature)
	assert.JSONEq(t, `{"city":"Paris"}`, string(resp.ToolCalls[0].Arguments))
	assert.True(t, strings.HasPrefix(resp.ToolCalls[0].ID, generatedIDPrefix))
	assert.Equal(t, "fc-2", resp.ToolCalls[1].ID)
	assert.Equal(t, llm.Usage{PromptTokens: 20, CompletionTokens: 10, TotalTokens: 30}, resp.Usage)
}

func TestGenerateStreamBlockedPrompt(t *testing.T) {
	f := newFake(t, sse(`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":7,"totalTokenCount":7}}`))
	onDelta, deltas := collect()
	resp, err := f.model(t, Config{}).Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")}, onDelta)
	require.NoError(t, err)
	assert.Empty(t, *deltas)
	assert.Equal(t, llm.FinishContentFilter, resp.FinishReason)
	assert.Equal(t, 7, resp.Usage.PromptTokens)
}

func TestGenerateStreamFailures(t *testing.T) {
	first := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Spain "}]}}]}`
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		wantIs     error
		wantStatus int
		wantIn     string
		// wantBroken: a 200 stream cut short, which a retry may repair.
		wantBroken bool
	}{
		{
			name:    "ends without a finish reason",
			handler: sse(first, `{"candidates":[{"content":{"role":"model","parts":[{"text":"won"}]}}]}`),
			wantIs:  llm.ErrUnavailable, wantIn: "before the model finished", wantBroken: true,
		},
		{
			name:    "ends without any chunk",
			handler: sse(),
			wantIs:  llm.ErrUnavailable, wantIn: "without any data", wantBroken: true,
		},
		{
			name:    "error event mid-stream",
			handler: sse(first, `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`),
			wantIs:  llm.ErrUnavailable, wantStatus: 503, wantIn: "The model is overloaded.", wantBroken: true,
		},
		{
			name: "connection dropped mid-stream",
			handler: func(w http.ResponseWriter, r *http.Request) {
				sse(first)(w, r)
				panic(http.ErrAbortHandler)
			},
			wantIs: llm.ErrUnavailable, wantIn: "request to the Gemini API failed", wantBroken: true,
		},
		{
			name: "body cut inside an event",
			handler: func(w http.ResponseWriter, r *http.Request) {
				sse(first)(w, r)
				_, _ = io.WriteString(w, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"won"}]},"finishReason":"ST`)
			},
			wantIs: llm.ErrUnavailable, wantIn: "before the model finished", wantBroken: true,
		},
		{
			name:    "malformed chunk",
			handler: sse(first, `{"candidates":[{"content":`),
			wantIs:  llm.ErrUnavailable, wantIn: "request to the Gemini API failed",
		},
		{
			name:    "rejected before streaming",
			handler: reply(http.StatusBadRequest, errorBody(400, "INVALID_ARGUMENT", "Invalid value at 'contents'.")),
			wantIs:  llm.ErrBadRequest, wantStatus: 400, wantIn: "Invalid value at 'contents'.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.handler)
			onDelta, _ := collect()
			resp, err := f.model(t, Config{}).Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")}, onDelta)
			require.Error(t, err)
			assert.Nil(t, resp, "no partial reply")
			assert.ErrorIs(t, err, tt.wantIs)
			var ae *llm.APIError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tt.wantStatus, ae.Status)
			assert.Equal(t, tt.wantBroken, errors.Is(err, llm.ErrStreamBroken), "matches llm.ErrStreamBroken: %v", err)
			assert.Contains(t, err.Error(), tt.wantIn)
			noKey(t, err.Error())
			assert.Len(t, f.requests(), 1, "no hidden reconnects or retries")
		})
	}
}

// TestGenerateStreamRetriedAfterCut: a stream cut after its 200 is sent
// again (llm.CallModel); the observer is told to drop the partial text, and
// the tokens the cut attempt reported are counted.
func TestGenerateStreamRetriedAfterCut(t *testing.T) {
	const done = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Spain won."}]},"finishReason":"STOP"}],` +
		`"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":3,"totalTokenCount":12}}`
	tests := []struct {
		name      string
		cut       http.HandlerFunc
		wantSpent llm.Usage // reported by the cut attempt
	}{
		{
			name: "connection dropped",
			cut: func(w http.ResponseWriter, r *http.Request) {
				sse(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Spa"}]}}],"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9}}`)(w, r)
				panic(http.ErrAbortHandler)
			},
			wantSpent: llm.Usage{PromptTokens: 9, TotalTokens: 9},
		},
		{
			name: "ended without a finish reason",
			cut:  sse(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Spa"}]}}]}`),
		},
		{
			name: "overloaded error event",
			cut: sse(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Spa"}]}}]}`,
				`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.cut, sse(done))
			cc := fastClient()
			cc.MaxRetries = 2
			onDelta, deltas := collect()
			resp, err := f.model(t, Config{Client: cc}).Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")}, onDelta)
			require.NoError(t, err)
			assert.Equal(t, []llm.Delta{{Content: "Spa"}, {Restart: true}, {Content: "Spain won."}}, *deltas)
			assert.Equal(t, "Spain won.", resp.Content)
			assert.Equal(t, llm.FinishStop, resp.FinishReason)
			want := llm.Usage{PromptTokens: 9, CompletionTokens: 3, TotalTokens: 12}
			assert.Equal(t, want.Add(tt.wantSpent), resp.Usage)
			reqs := f.requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, reqs[0].Body, reqs[1].Body, "the same request is sent again")
		})
	}
}

// TestGenerateStreamNotRetried: a refusal or a malformed event inside a
// 200 stream is not a cut, and is not sent again.
func TestGenerateStreamNotRetried(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		wantIs  error
	}{
		{"refusal event", sse(`{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT"}}`), llm.ErrBadRequest},
		{"malformed event", sse(`{"candidates":[{"content":`), llm.ErrUnavailable},
		{"event line over the limit", sse(`{"candidates":[{"content":{"parts":[{"text":"` + strings.Repeat("x", maxEventLine) + `"}]}}]}`), llm.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.handler)
			cc := fastClient()
			cc.MaxRetries = 2
			_, err := f.model(t, Config{Client: cc}).Generate(context.Background(), []schemas.Message{schemas.UserMessage("q")}, llm.OnDelta(func(llm.Delta) {}))
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.wantIs)
			assert.NotErrorIs(t, err, llm.ErrStreamBroken)
			assert.Len(t, f.requests(), 1)
		})
	}
}
