package fake_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/schemas"
)

var hello = []schemas.Message{schemas.SystemMessage("be brief"), schemas.UserMessage("hello")}

func TestScriptInOrder(t *testing.T) {
	g := &llm.Grounding{WebSearchQueries: []string{"q"}, Chunks: []llm.GroundingChunk{{URI: "https://a.example", Title: "a"}}}
	m := fake.New(
		fake.Text("one").WithTokens(3, 1),
		fake.JSON(map[string]int{"n": 2}),
		fake.Respond(llm.Response{Content: "three", Parts: []string{"th", "ree"}}).WithGrounding(g).WithModel("gemini-x"),
	)
	ctx := context.Background()

	r1, err := m.Generate(ctx, hello)
	require.NoError(t, err)
	assert.Equal(t, "one", r1.Content)
	assert.Equal(t, llm.Usage{PromptTokens: 3, CompletionTokens: 1, TotalTokens: 4}, r1.Usage)
	assert.Equal(t, llm.FinishStop, r1.FinishReason)
	assert.Equal(t, "fake", r1.Model)

	r2, err := m.Generate(ctx, hello)
	require.NoError(t, err)
	assert.JSONEq(t, `{"n":2}`, r2.Content)

	r3, err := m.Generate(ctx, hello)
	require.NoError(t, err)
	assert.Equal(t, []string{"th", "ree"}, r3.Parts)
	assert.Same(t, g, r3.Grounding)
	assert.Equal(t, "gemini-x", r3.Model)

	assert.Equal(t, 0, m.Remaining())
	_, err = m.Generate(ctx, hello)
	require.Error(t, err)
	assert.ErrorIs(t, err, fake.ErrExhausted)
	assert.Contains(t, err.Error(), "call 4")
	assert.Contains(t, err.Error(), "only 3 replies were scripted")
	assert.Contains(t, err.Error(), `"hello"`)
}

func TestCallsAreRecorded(t *testing.T) {
	m := fake.New(fake.Text("a"), fake.Text("b"))
	tool := schemas.ToolDef{Name: "search", Description: "web search"}
	msgs := []schemas.Message{schemas.UserMessage("first")}
	_, err := m.Generate(context.Background(), msgs, llm.Temperature(0.5), llm.Tools(tool), llm.WithToolChoice(llm.ToolRequired))
	require.NoError(t, err)
	msgs[0].Content = "mutated after the call"
	_, err = m.Generate(context.Background(), hello, llm.GoogleSearch())
	require.NoError(t, err)

	calls := m.Calls()
	require.Len(t, calls, 2)
	assert.Equal(t, 0, calls[0].Index)
	assert.Equal(t, "first", calls[0].Messages[0].Content, "messages are copied")
	require.NotNil(t, calls[0].Request.Temperature)
	assert.Equal(t, 0.5, *calls[0].Request.Temperature)
	assert.Equal(t, []schemas.ToolDef{tool}, calls[0].Request.Tools)
	assert.Equal(t, llm.ToolRequired, calls[0].Request.ToolChoice)
	assert.Equal(t, 1, calls[1].Index)
	assert.True(t, calls[1].Request.GoogleSearch)
	assert.Equal(t, "hello", calls[1].LastMessage().Content)
	assert.Equal(t, schemas.Message{}, fake.Call{}.LastMessage())
}

func TestErrorReply(t *testing.T) {
	apiErr := &llm.APIError{Provider: "fake", Status: 429, Message: "slow down"}
	m := fake.New(fake.Error(apiErr), fake.Error(nil))
	_, err := m.Generate(context.Background(), hello)
	assert.Same(t, apiErr, err)
	_, err = m.Generate(context.Background(), hello)
	assert.EqualError(t, err, "fake: scripted error")
}

func TestToolCalls(t *testing.T) {
	m := fake.New(fake.Text("first"))
	m.Add(fake.ToolCalls(fake.ToolCall("search", map[string]string{"query": "go"}), schemas.ToolCall{ID: "mine", Name: "read"}))
	_, err := m.Generate(context.Background(), hello)
	require.NoError(t, err)
	resp, err := m.Generate(context.Background(), hello)
	require.NoError(t, err, "Add appends to the script")
	assert.Equal(t, llm.FinishToolCalls, resp.FinishReason)
	require.Len(t, resp.ToolCalls, 2)
	assert.Equal(t, "call_1_0", resp.ToolCalls[0].ID, "generated from the call and position")
	assert.Equal(t, "mine", resp.ToolCalls[1].ID)
	assert.Equal(t, "search", resp.ToolCalls[0].Name)
	assert.JSONEq(t, `{"query":"go"}`, string(resp.ToolCalls[0].Arguments))

	assert.JSONEq(t, `{}`, string(fake.ToolCall("n", nil).Arguments))
	assert.Equal(t, `{"broken": `, string(fake.ToolCall("r", `{"broken": `).Arguments), "strings are used as is")
	assert.Equal(t, `[1]`, string(fake.ToolCall("r", json.RawMessage(`[1]`)).Arguments))
	assert.Contains(t, string(fake.ToolCall("b", func() {}).Arguments), "unmarshallable")
}

func TestJSONReply(t *testing.T) {
	m := fake.New(fake.JSON(`{"raw": true,}`), fake.JSON(json.RawMessage(`[1]`)), fake.JSON(make(chan int)))
	r, err := m.Generate(context.Background(), hello)
	require.NoError(t, err)
	assert.Equal(t, `{"raw": true,}`, r.Content, "strings are scripted as is")
	r, err = m.Generate(context.Background(), hello)
	require.NoError(t, err)
	assert.Equal(t, `[1]`, r.Content)
	_, err = m.Generate(context.Background(), hello)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not marshal")
}

func TestWhenMatchesConcurrentCalls(t *testing.T) {
	m := fake.New(
		fake.JSON(schemas.Reflection{IsSufficient: true}).When(fake.Schema("Reflection")),
		fake.Text("summary C").When(fake.Contains("topic C")),
		fake.Text("summary A").When(fake.Contains("topic A")),
		fake.Text("summary B").When(fake.All(fake.Contains("topic B"), fake.AnyContains("be brief"))),
	)
	topics := []string{"A", "B", "C"}
	got := make([]string, len(topics))
	var wg sync.WaitGroup
	for i, topic := range topics {
		wg.Go(func() {
			resp, err := m.Generate(context.Background(), []schemas.Message{schemas.SystemMessage("be brief"), schemas.UserMessage("research topic " + topic)})
			if assert.NoError(t, err) {
				got[i] = resp.Content
			}
		})
	}
	wg.Wait()
	assert.Equal(t, []string{"summary A", "summary B", "summary C"}, got)

	r, err := llm.Structured[schemas.Reflection](context.Background(), m, hello)
	require.NoError(t, err)
	assert.True(t, r.IsSufficient)
	assert.Equal(t, 0, m.Remaining())
}

func TestNoMatchingReply(t *testing.T) {
	m := fake.New(fake.Text("a").When(fake.Contains("zzz")), fake.Text("b").When(fake.HasTool("search")))
	_, err := m.Generate(context.Background(), hello, llm.Tools(schemas.ToolDef{Name: "read"}))
	require.Error(t, err)
	assert.ErrorIs(t, err, fake.ErrExhausted)
	msg := err.Error()
	assert.Contains(t, msg, "matches none of the 2 replies left")
	assert.Contains(t, msg, "text with a matcher")
	assert.Contains(t, msg, "of 2 scripted")
	assert.Contains(t, msg, "1 tool(s)")
	assert.Equal(t, 2, m.Remaining())

	resp, err := m.Generate(context.Background(), hello, llm.Tools(schemas.ToolDef{Name: "search"}))
	require.NoError(t, err)
	assert.Equal(t, "b", resp.Content)
}

func TestRepeat(t *testing.T) {
	m := fake.New(fake.Text("special").When(fake.Contains("special")), fake.Text("default").Repeat())
	for i := range 3 {
		resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage(fmt.Sprint("call ", i))})
		require.NoError(t, err)
		assert.Equal(t, "default", resp.Content)
	}
	resp, err := m.Generate(context.Background(), []schemas.Message{schemas.UserMessage("special")})
	require.NoError(t, err)
	assert.Equal(t, "special", resp.Content)
	assert.Equal(t, 1, m.Remaining())
}

func TestStreamingChunks(t *testing.T) {
	tests := []struct {
		name       string
		reply      fake.Reply
		wantDeltas []llm.Delta
	}{
		{"default chunk", fake.Text("abcdefghij"), []llm.Delta{{Content: "abcdefgh"}, {Content: "ij"}}},
		{"runes, not bytes", fake.Text("héllo").Chunks(2), []llm.Delta{{Content: "hé"}, {Content: "ll"}, {Content: "o"}}},
		{"reasoning first", fake.Text("ok").WithReasoning("hmm").Chunks(2), []llm.Delta{{Reasoning: "hm"}, {Reasoning: "m"}, {Content: "ok"}}},
		{"tool calls stream nothing", fake.ToolCalls(fake.ToolCall("t", nil)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []llm.Delta
			m := fake.New(tt.reply)
			resp, err := m.Generate(context.Background(), hello, llm.OnDelta(func(d llm.Delta) { got = append(got, d) }))
			require.NoError(t, err)
			assert.Equal(t, tt.wantDeltas, got)
			var joined strings.Builder
			for _, d := range got {
				joined.WriteString(d.Content)
			}
			assert.Equal(t, resp.Content, joined.String(), "the response is the concatenation")
		})
	}
}

func TestStreamingStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := fake.New(fake.Text(strings.Repeat("x", 100)).Chunks(1))
	n := 0
	_, err := m.Generate(ctx, hello, llm.OnDelta(func(llm.Delta) {
		if n++; n == 3 {
			cancel()
		}
	}))
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 3, n)
}

func TestDelayHonoursContext(t *testing.T) {
	t.Run("delay elapses", func(t *testing.T) {
		m := fake.New(fake.Text("late").After(5 * time.Millisecond))
		start := time.Now()
		resp, err := m.Generate(context.Background(), hello)
		require.NoError(t, err)
		assert.Equal(t, "late", resp.Content)
		assert.GreaterOrEqual(t, time.Since(start), 5*time.Millisecond)
	})
	t.Run("cancelled during the delay", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		m := fake.New(fake.Text("never").After(time.Hour))
		_, err := m.Generate(ctx, hello)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("block until cancelled", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		m := fake.New(fake.Text("never").Block())
		_, err := m.Generate(ctx, hello)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("an already cancelled call uses no reply", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		m := fake.New(fake.Text("kept"))
		_, err := m.Generate(ctx, hello)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 1, m.Remaining())
		assert.Len(t, m.Calls(), 1, "the attempt is still recorded")
	})
}

func TestTimeoutThroughCall(t *testing.T) {
	// A blocking fake under llm.Call shows what a provider timeout looks like.
	m := fake.New(fake.Text("never").Block())
	_, err := llm.Call(context.Background(), llm.ClientConfig{Timeout: 10 * time.Millisecond}, "fake", func(ctx context.Context) (*llm.Response, error) {
		return m.Generate(ctx, hello)
	})
	assert.ErrorIs(t, err, llm.ErrTimeout)
}

func TestConcurrentUse(t *testing.T) {
	const n = 50
	m := fake.New(fake.Text("r").Repeat())
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, err := m.Generate(context.Background(), hello, llm.OnDelta(func(llm.Delta) {}))
			assert.NoError(t, err)
			_ = m.Calls()
			_ = m.Remaining()
		})
	}
	for range 5 {
		wg.Go(func() { m.Add(fake.Text("extra")) })
	}
	wg.Wait()
	calls := m.Calls()
	require.Len(t, calls, n)
	seen := map[int]bool{}
	for _, c := range calls {
		seen[c.Index] = true
	}
	assert.Len(t, seen, n, "every call has its own index")
}

func TestZeroModel(t *testing.T) {
	var m fake.Model
	_, err := m.Generate(context.Background(), nil)
	assert.ErrorIs(t, err, fake.ErrExhausted)
	assert.Contains(t, err.Error(), "only 0 replies were scripted")
	assert.Contains(t, err.Error(), "last message none")
	assert.True(t, errors.Is(err, fake.ErrExhausted))
}

func TestRepeatedRepliesAreIndependentCopies(t *testing.T) {
	m := fake.New(fake.Respond(llm.Response{Content: "ab", Parts: []string{"a", "b"}, ToolCalls: []schemas.ToolCall{{Name: "t"}}}).Repeat())
	r1, err := m.Generate(context.Background(), hello)
	require.NoError(t, err)
	r1.Parts[0] = "changed"
	r1.ToolCalls[0].Name = "changed"
	r2, err := m.Generate(context.Background(), hello)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, r2.Parts)
	assert.Equal(t, "t", r2.ToolCalls[0].Name)
	assert.Equal(t, "call_1_0", r2.ToolCalls[0].ID)
}
