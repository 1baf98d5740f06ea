package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/fake"
	"github.com/deepgraph/deepgraph/schemas"
)

var question = []schemas.Message{schemas.UserMessage("How do Go iterators work?")}

func TestStructuredSendsSchemaAndDecodes(t *testing.T) {
	m := fake.New(fake.JSON(schemas.SearchQueryList{Query: []string{"go range over func", "iter.Seq"}, Rationale: "two aspects"}))

	got, err := llm.Structured[schemas.SearchQueryList](context.Background(), m, question, llm.Temperature(1))
	require.NoError(t, err)
	assert.Equal(t, schemas.SearchQueryList{Query: []string{"go range over func", "iter.Seq"}, Rationale: "two aspects"}, got)

	calls := m.Calls()
	require.Len(t, calls, 1)
	req := calls[0].Request
	assert.Equal(t, "SearchQueryList", req.SchemaName)
	require.NotNil(t, req.Schema)
	assert.Equal(t, []string{"query", "rationale"}, req.Schema.Required)
	assert.Equal(t, "A list of search queries to be used for web research.", req.Schema.Properties["query"].Description)
	// The schema sent stays strict: providers in strict mode need it.
	data, err := json.Marshal(req.Schema.AdditionalProperties)
	require.NoError(t, err)
	assert.Equal(t, "false", string(data))
	require.NotNil(t, req.Temperature, "the caller's options reach the provider")
	assert.Equal(t, 1.0, *req.Temperature)
	assert.Equal(t, question, calls[0].Messages)
}

func TestStructuredReadsMessyReplies(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		want  schemas.Reflection
	}{
		{
			name:  "fence and prose",
			reply: "Here is my assessment:\n```json\n{\"is_sufficient\": false, \"knowledge_gap\": \"pricing\", \"follow_up_queries\": [\"go pricing\"]}\n```",
			want:  schemas.Reflection{KnowledgeGap: "pricing", FollowUpQueries: []string{"go pricing"}},
		},
		{
			name:  "think block, comments and trailing commas as in the reference prompt",
			reply: "<think>The summaries cover {most} things.</think>\n{\n \"is_sufficient\": true, // enough\n \"knowledge_gap\": \"\",\n \"follow_up_queries\": [],\n}",
			want:  schemas.Reflection{IsSufficient: true, FollowUpQueries: []string{}},
		},
		{
			name:  "unknown keys are ignored",
			reply: `{"reasoning": "…", "is_sufficient": true, "knowledge_gap": "", "follow_up_queries": null}`,
			want:  schemas.Reflection{IsSufficient: true},
		},
		{
			name:  "an earlier object that does not validate is skipped",
			reply: `I considered {"is_sufficient": "maybe"} but settled on {"is_sufficient": true, "knowledge_gap": "", "follow_up_queries": []}`,
			want:  schemas.Reflection{IsSufficient: true, FollowUpQueries: []string{}},
		},
		{
			name:  "object wrapped in an array",
			reply: `[{"is_sufficient": true, "knowledge_gap": "", "follow_up_queries": []}]`,
			want:  schemas.Reflection{IsSufficient: true, FollowUpQueries: []string{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := fake.New(fake.Text(tt.reply))
			got, err := llm.Structured[schemas.Reflection](context.Background(), m, question)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Len(t, m.Calls(), 1, "no re-ask for a readable reply")
		})
	}
}

func TestStructuredReasksWithTheProblem(t *testing.T) {
	bad := `{"query": ["a"]}` // rationale missing
	m := fake.New(
		fake.Text(bad),
		fake.JSON(schemas.SearchQueryList{Query: []string{"a"}, Rationale: "r"}),
	)
	got, err := llm.Structured[schemas.SearchQueryList](context.Background(), m, question)
	require.NoError(t, err)
	assert.Equal(t, "r", got.Rationale)

	calls := m.Calls()
	require.Len(t, calls, 2)
	msgs := calls[1].Messages
	require.Len(t, msgs, 3)
	assert.Equal(t, question[0], msgs[0])
	assert.Equal(t, schemas.AssistantMessage(bad), msgs[1], "the raw reply is appended")
	assert.Equal(t, schemas.User, msgs[2].Role)
	assert.Contains(t, msgs[2].Content, "SearchQueryList")
	assert.Contains(t, msgs[2].Content, "rationale", "the validation error is quoted")
	assert.Contains(t, msgs[2].Content, "missing")
	assert.Equal(t, "SearchQueryList", calls[1].Request.SchemaName, "the re-ask asks for the same schema")
	assert.Len(t, question, 1, "the caller's slice is not modified")
}

func TestStructuredReasksCount(t *testing.T) {
	tests := []struct {
		name      string
		opts      []llm.Option
		wantCalls int
	}{
		{"default", nil, 1 + llm.DefaultReasks},
		{"none", []llm.Option{llm.Reasks(0)}, 1},
		{"negative means none", []llm.Option{llm.Reasks(-3)}, 1},
		{"three", []llm.Option{llm.Reasks(3)}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := fake.New(fake.Text("no JSON here, sorry").Repeat())
			_, err := llm.Structured[schemas.Reflection](context.Background(), m, question, tt.opts...)
			require.Error(t, err)
			assert.Len(t, m.Calls(), tt.wantCalls)

			var se *llm.StructuredError
			require.ErrorAs(t, err, &se)
			assert.Len(t, se.Replies, tt.wantCalls)
			assert.Equal(t, "Reflection", se.Schema)
			assert.ErrorIs(t, err, llm.ErrInvalidReply)
			assert.ErrorIs(t, err, llm.ErrNoJSON)
		})
	}
}

func TestStructuredErrorDetails(t *testing.T) {
	m := fake.New(
		fake.Text(`{"is_sufficient": "yes please", "knowledge_gap": "", "follow_up_queries": []}`),
		fake.Text(`{"is_sufficient": 1, "knowledge_gap": "", "follow_up_queries": []}`),
	)
	_, err := llm.Structured[schemas.Reflection](context.Background(), m, question)
	require.Error(t, err)
	var se *llm.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, []string{
		`{"is_sufficient": "yes please", "knowledge_gap": "", "follow_up_queries": []}`,
		`{"is_sufficient": 1, "knowledge_gap": "", "follow_up_queries": []}`,
	}, se.Replies)
	assert.NotErrorIs(t, err, llm.ErrNoJSON, "JSON was found; it did not validate")
	msg := err.Error()
	assert.Contains(t, msg, "Reflection")
	assert.Contains(t, msg, "2 replies")
	assert.Contains(t, msg, "does not match the schema")
	assert.NotContains(t, msg, "yes please", "raw replies are not part of the message")
	// The re-ask quoted the type problem.
	assert.Contains(t, m.Calls()[1].LastMessage().Content, "boolean")
}

func TestStructuredTruncatedReply(t *testing.T) {
	m := fake.New(fake.Text(`{"query": ["a", "b`).WithFinish(llm.FinishLength).Repeat())
	_, err := llm.Structured[schemas.SearchQueryList](context.Background(), m, question)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cut off at the token limit")
	assert.Contains(t, m.Calls()[1].LastMessage().Content, "cut off")
	var se *llm.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, llm.FinishLength, se.Finish)
}

func TestStructuredProviderErrorsPassThrough(t *testing.T) {
	apiErr := &llm.APIError{Provider: "gemini", Status: 429, Message: "quota"}
	m := fake.New(fake.Error(apiErr))
	_, err := llm.Structured[schemas.SearchQueryList](context.Background(), m, question)
	require.Error(t, err)
	assert.ErrorIs(t, err, llm.ErrRateLimited)
	assert.NotErrorIs(t, err, llm.ErrInvalidReply)
	var got *llm.APIError
	require.ErrorAs(t, err, &got)
	assert.Same(t, apiErr, got)
}

func TestStructuredProviderErrorDuringReask(t *testing.T) {
	m := fake.New(fake.Text("nothing"), fake.Error(&llm.APIError{Provider: "openai", Status: 503}))
	_, err := llm.Structured[schemas.SearchQueryList](context.Background(), m, question)
	assert.ErrorIs(t, err, llm.ErrUnavailable)
	assert.Len(t, m.Calls(), 2)
}

func TestStructuredCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := fake.New(fake.JSON(schemas.SearchQueryList{}))
	_, err := llm.Structured[schemas.SearchQueryList](ctx, m, question)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestStructuredReadsToolCallArguments(t *testing.T) {
	m := fake.New(fake.ToolCalls(
		fake.ToolCall("other", `{"query": ["wrong"], "rationale": "x"}`),
		fake.ToolCall("SearchQueryList", schemas.SearchQueryList{Query: []string{"q"}, Rationale: "r"}),
	))
	got, err := llm.Structured[schemas.SearchQueryList](context.Background(), m, question)
	require.NoError(t, err)
	assert.Equal(t, []string{"q"}, got.Query)
}

func TestStructuredOverridesResponseSchemaOption(t *testing.T) {
	other := &jsonschema.Schema{Type: "string"}
	m := fake.New(fake.JSON(schemas.SearchQueryList{Query: []string{}, Rationale: "r"}))
	_, err := llm.Structured[schemas.SearchQueryList](context.Background(), m, question, llm.ResponseSchema("Other", other))
	require.NoError(t, err)
	assert.Equal(t, "SearchQueryList", m.Calls()[0].Request.SchemaName)
	assert.NotSame(t, other, m.Calls()[0].Request.Schema)
}

type page[T any] struct {
	Items []T `json:"items"`
}

func TestStructuredOtherShapes(t *testing.T) {
	t.Run("slice", func(t *testing.T) {
		m := fake.New(fake.Text(`The queries: ["a", "b"]`))
		got, err := llm.Structured[[]string](context.Background(), m, question)
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b"}, got)
		assert.Equal(t, "response", m.Calls()[0].Request.SchemaName)
	})
	t.Run("scalar", func(t *testing.T) {
		m := fake.New(fake.Text(` 42 `))
		got, err := llm.Structured[int](context.Background(), m, question)
		require.NoError(t, err)
		assert.Equal(t, 42, got)
	})
	t.Run("generic type name is sanitised", func(t *testing.T) {
		m := fake.New(fake.Text(`{"items": [1]}`))
		got, err := llm.Structured[page[int]](context.Background(), m, question)
		require.NoError(t, err)
		assert.Equal(t, []int{1}, got.Items)
		assert.Equal(t, "page_int", m.Calls()[0].Request.SchemaName)
	})
	t.Run("pointer", func(t *testing.T) {
		m := fake.New(fake.Text(`{"query": ["x"], "rationale": "y"}`))
		got, err := llm.Structured[*schemas.SearchQueryList](context.Background(), m, question)
		require.NoError(t, err)
		require.NotNil(t, got)
		assert.Equal(t, "y", got.Rationale)
		assert.Equal(t, "SearchQueryList", m.Calls()[0].Request.SchemaName)
	})
}

func TestStructuredRefusesBadSetups(t *testing.T) {
	_, err := llm.Structured[schemas.Reflection](context.Background(), nil, question)
	assert.ErrorIs(t, err, llm.ErrNoModel)

	m := fake.New()
	_, err = llm.Structured[struct{ C chan int }](context.Background(), m, question)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot derive a JSON Schema")
	assert.Empty(t, m.Calls(), "no call is made with a bad type")
}

func TestStructuredContentFilter(t *testing.T) {
	m := fake.New(fake.Text("").WithFinish(llm.FinishContentFilter))
	_, err := llm.Structured[schemas.Reflection](context.Background(), m, question, llm.Reasks(0))
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "content filter"), err.Error())
	assert.True(t, errors.Is(err, llm.ErrNoJSON))
}

type outer struct {
	Name  string  `json:"name"`
	Inner []inner `json:"inner"`
}

type inner struct {
	N int `json:"n"`
}

func TestStructuredIgnoresUnknownKeysAtAnyDepth(t *testing.T) {
	m := fake.New(fake.Text(`{"name": "x", "extra": 1, "inner": [{"n": 2, "note": "ignored"}]}`))
	got, err := llm.Structured[outer](context.Background(), m, question)
	require.NoError(t, err)
	assert.Equal(t, outer{Name: "x", Inner: []inner{{N: 2}}}, got)

	// The schema sent still forbids them.
	data, err := json.Marshal(m.Calls()[0].Request.Schema.Properties["inner"].Items.AdditionalProperties)
	require.NoError(t, err)
	assert.Equal(t, "false", string(data))
}

func TestStructuredErrorMessageIsBounded(t *testing.T) {
	huge := strings.Repeat("x", 50_000)
	m := fake.New(fake.Text(`{"is_sufficient": "` + huge + `", "knowledge_gap": "", "follow_up_queries": []}`))
	_, err := llm.Structured[schemas.Reflection](context.Background(), m, question, llm.Reasks(0))
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 600)
	var se *llm.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Replies[0], huge, "the full reply stays available")
}
