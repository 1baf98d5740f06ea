package llm_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/schemas"
)

func TestEmitDeltasOutsideAGraphDoesNotStream(t *testing.T) {
	r := llm.NewRequest(llm.EmitDeltas(context.Background(), llm.RoleAnswer))
	assert.Nil(t, r.OnDelta, "nobody listens, so the provider need not stream")

	var got []llm.Delta
	r = llm.NewRequest(llm.OnDelta(func(d llm.Delta) { got = append(got, d) }), llm.EmitDeltas(context.Background(), llm.RoleAnswer))
	require.NotNil(t, r.OnDelta, "an earlier OnDelta is kept")
	r.OnDelta(llm.Delta{Content: "x"})
	assert.Equal(t, []llm.Delta{{Content: "x"}}, got)
}

type answerState struct {
	Answer string
}

var answerField = graph.Value(func(s *answerState) *string { return &s.Answer })

func TestEmitDeltasReachesTheGraphStream(t *testing.T) {
	model := fake.New(fake.Text("Iterators are functions.").WithReasoning("Think.").Chunks(4))
	var local strings.Builder
	g := graph.New[answerState](answerField)
	g.AddNode("answer", func(ctx context.Context, s answerState) (graph.Update[answerState], error) {
		resp, err := model.Generate(ctx, question,
			llm.OnDelta(func(d llm.Delta) { local.WriteString(d.Content) }),
			llm.EmitDeltas(ctx, llm.RoleAnswer))
		if err != nil {
			return graph.Update[answerState]{}, err
		}
		return graph.Writes(answerField.Set(resp.Content)), nil
	})
	g.AddEdge(graph.Start, "answer")
	g.AddEdge("answer", graph.End)
	run, err := g.Compile()
	require.NoError(t, err)

	var content, reasoning strings.Builder
	var tokens int
	for ev, err := range run.Stream(context.Background(), answerState{}) {
		require.NoError(t, err)
		if ev.Kind != graph.EventCustom {
			continue
		}
		tok, ok := ev.Value.(llm.Token)
		require.True(t, ok, "custom event value is an llm.Token, got %T", ev.Value)
		assert.Equal(t, llm.RoleAnswer, tok.Role)
		assert.Equal(t, "answer", ev.Node)
		content.WriteString(tok.Content)
		reasoning.WriteString(tok.Reasoning)
		tokens++
	}
	assert.Equal(t, "Iterators are functions.", content.String())
	assert.Equal(t, "Think.", reasoning.String())
	assert.Equal(t, 2+6, tokens, "one token per delta: 2 reasoning chunks and 6 content chunks of 4 runes")
	assert.Equal(t, "Iterators are functions.", local.String(), "the earlier OnDelta still ran")
}

func collect(t *testing.T, seq func(func(llm.Delta, error) bool)) (string, []error) {
	t.Helper()
	var b strings.Builder
	var errs []error
	for d, err := range seq {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		b.WriteString(d.Content)
	}
	return b.String(), errs
}

func TestStream(t *testing.T) {
	t.Run("deltas in order", func(t *testing.T) {
		m := fake.New(fake.Text("héllo wörld, streamed").Chunks(3))
		var n int
		for d, err := range llm.Stream(context.Background(), m, question) {
			require.NoError(t, err)
			assert.LessOrEqual(t, len([]rune(d.Content)), 3)
			n++
		}
		assert.Equal(t, 7, n)
		got, errs := collect(t, llm.Stream(context.Background(), fake.New(fake.Text("héllo wörld, streamed").Chunks(3)), question))
		assert.Empty(t, errs)
		assert.Equal(t, "héllo wörld, streamed", got)
	})
	t.Run("a failed call ends with its error", func(t *testing.T) {
		boom := errors.New("boom")
		got, errs := collect(t, llm.Stream(context.Background(), fake.New(fake.Error(boom)), question))
		assert.Empty(t, got)
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[0], boom)
	})
	t.Run("a provider that does not stream yields the whole reply", func(t *testing.T) {
		got, errs := collect(t, llm.Stream(context.Background(), nonStreaming{"all at once"}, question))
		assert.Empty(t, errs)
		assert.Equal(t, "all at once", got)
	})
	t.Run("nil model", func(t *testing.T) {
		_, errs := collect(t, llm.Stream(context.Background(), nil, question))
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[0], llm.ErrNoModel)
	})
	t.Run("options reach the model and an earlier OnDelta still runs", func(t *testing.T) {
		m := fake.New(fake.Text("abc").Chunks(1))
		var seen strings.Builder
		got, _ := collect(t, llm.Stream(context.Background(), m, question, llm.MaxTokens(9), llm.OnDelta(func(d llm.Delta) { seen.WriteString(d.Content) })))
		assert.Equal(t, "abc", got)
		assert.Equal(t, "abc", seen.String())
		assert.Equal(t, 9, m.Calls()[0].Request.MaxTokens)
	})
}

// nonStreaming ignores OnDelta.
type nonStreaming struct{ text string }

func (n nonStreaming) Generate(context.Context, []schemas.Message, ...llm.Option) (*llm.Response, error) {
	return &llm.Response{Content: n.text}, nil
}

// endless streams until its context is cancelled, then records that it
// returned.
type endless struct{ returned atomic.Bool }

func (e *endless) Generate(ctx context.Context, _ []schemas.Message, opts ...llm.Option) (*llm.Response, error) {
	defer e.returned.Store(true)
	r := llm.NewRequest(opts...)
	for ctx.Err() == nil {
		r.OnDelta(llm.Delta{Content: "x"})
	}
	return nil, ctx.Err()
}

func TestStreamBreakCancelsAndWaits(t *testing.T) {
	m := &endless{}
	n := 0
	for _, err := range llm.Stream(context.Background(), m, question) {
		require.NoError(t, err)
		if n++; n == 3 {
			break
		}
	}
	assert.True(t, m.returned.Load(), "the call returned before the loop did")
}

func TestStreamPanicInLoopStillStopsTheCall(t *testing.T) {
	m := &endless{}
	func() {
		defer func() { assert.Equal(t, "consumer failed", recover()) }()
		for range llm.Stream(context.Background(), m, question) {
			panic("consumer failed")
		}
	}()
	assert.True(t, m.returned.Load())
}

func TestStreamParentCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &endless{}
	var errs []error
	n := 0
	for _, err := range llm.Stream(ctx, m, question) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if n++; n == 2 {
			cancel()
		}
	}
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], context.Canceled)
	assert.True(t, m.returned.Load())
}

type panicking struct{}

func (panicking) Generate(_ context.Context, _ []schemas.Message, opts ...llm.Option) (*llm.Response, error) {
	llm.NewRequest(opts...).OnDelta(llm.Delta{Content: "before"})
	panic("provider bug")
}

func TestStreamProviderPanicBecomesAnError(t *testing.T) {
	got, errs := collect(t, llm.Stream(context.Background(), panicking{}, question))
	assert.Equal(t, "before", got)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "panicked while streaming: provider bug")
}

// restartingModel streams "Hal", breaks, restarts and streams "Hello".
type restartingModel struct{}

func (restartingModel) Generate(_ context.Context, _ []schemas.Message, opts ...llm.Option) (*llm.Response, error) {
	r := llm.NewRequest(opts...)
	for _, d := range []llm.Delta{{Content: "Hal"}, {Restart: true}, {Content: "Hello"}} {
		r.OnDelta(d)
	}
	return &llm.Response{Content: "Hello"}, nil
}

func TestEmitDeltasPassesARestartOn(t *testing.T) {
	g := graph.New[answerState](answerField)
	g.AddNode("answer", func(ctx context.Context, s answerState) (graph.Update[answerState], error) {
		resp, err := restartingModel{}.Generate(ctx, question, llm.EmitDeltas(ctx, llm.RoleAnswer))
		if err != nil {
			return graph.Update[answerState]{}, err
		}
		return graph.Writes(answerField.Set(resp.Content)), nil
	})
	g.AddEdge(graph.Start, "answer")
	g.AddEdge("answer", graph.End)
	run, err := g.Compile()
	require.NoError(t, err)
	var tokens []llm.Token
	for ev, err := range run.Stream(context.Background(), answerState{}) {
		require.NoError(t, err)
		if tok, ok := ev.Value.(llm.Token); ok {
			tokens = append(tokens, tok)
		}
	}
	assert.Equal(t, []llm.Token{
		{Role: llm.RoleAnswer, Content: "Hal"},
		{Role: llm.RoleAnswer, Restart: true},
		{Role: llm.RoleAnswer, Content: "Hello"},
	}, tokens)
}
