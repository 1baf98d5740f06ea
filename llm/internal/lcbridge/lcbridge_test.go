package lcbridge

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/llm/internal/wiretap"
	"github.com/deepgraph/deepgraph/schemas"
)

func TestTools(t *testing.T) {
	params := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"q": {Type: "string"}}, Required: []string{"q"}}
	defs := []schemas.ToolDef{
		{Name: "search", Description: "Search the web.", Parameters: params},
		{Name: "now"},
		{Name: "files.read_file"},
	}
	wire, err := llm.NewToolNames(defs)
	require.NoError(t, err)
	tools, names, err := Tools(defs, wire)
	require.NoError(t, err)
	require.Len(t, tools, 3)
	assert.Equal(t, map[string]bool{"search": true, "now": true, "files.read_file": true}, names, "the names, not the wire names")
	assert.Equal(t, "files__read_file", tools[2].Function.Name, "definitions carry the wire name")
	assert.Equal(t, "function", tools[0].Type)
	assert.Equal(t, "search", tools[0].Function.Name)
	assert.Equal(t, "Search the web.", tools[0].Function.Description)
	assert.Same(t, params, tools[0].Function.Parameters)
	assert.JSONEq(t, `{"type":"object","properties":{}}`, string(tools[1].Function.Parameters.(json.RawMessage)),
		"a tool without parameters takes an empty object")

	tools, names, err = Tools(nil, llm.ToolNames{})
	require.NoError(t, err)
	assert.Empty(t, tools)
	assert.Empty(t, names)

	for _, bad := range []struct {
		defs []schemas.ToolDef
		want string
	}{
		{[]schemas.ToolDef{{Description: "nameless"}}, "a tool needs a name"},
		{[]schemas.ToolDef{{Name: "a"}, {Name: "b"}, {Name: "a"}}, `two tools are named "a"`},
	} {
		_, _, err := Tools(bad.defs, llm.ToolNames{})
		assert.EqualError(t, err, bad.want)
	}
}

func TestToolCallArguments(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"q":"go"}`, `{"q":"go"}`},
		{"  {\"q\": 1}\n", `{"q": 1}`},
		{"", `{}`},
		{"   ", `{}`},
		{`[1,2]`, `[1,2]`},
		{`{"q":"unterminated`, `"{\"q\":\"unterminated"`},
		{`not json`, `"not json"`},
	}
	for _, tt := range tests {
		got := ToolCallArguments(tt.in)
		assert.Equal(t, tt.want, string(got), tt.in)
		assert.True(t, json.Valid(got), tt.in)
	}
}

// FuzzToolCallArguments: whatever a model writes, the result is valid JSON;
// text that is not JSON is kept as a JSON string.
func FuzzToolCallArguments(f *testing.F) {
	f.Add(`{"a":1}`)
	f.Add(`{"a":`)
	f.Add("\xff\xfe")
	f.Add(`"just a string"`)
	f.Fuzz(func(t *testing.T, s string) {
		got := ToolCallArguments(s)
		if !json.Valid(got) {
			t.Fatalf("invalid JSON %q from %q", got, s)
		}
		trimmed := strings.TrimSpace(s)
		if trimmed != "" && !json.Valid([]byte(trimmed)) {
			var back string
			if err := json.Unmarshal(got, &back); err != nil || (utf8.ValidString(trimmed) && back != trimmed) {
				t.Fatalf("text %q kept as %q", trimmed, got)
			}
		}
	})
}

func TestIntKey(t *testing.T) {
	info := map[string]any{"i": 3, "i64": int64(4), "f": float64(5), "s": "6", "nil": nil}
	tests := map[string]int{"i": 3, "i64": 4, "f": 5, "s": 0, "nil": 0, "absent": 0}
	for key, want := range tests {
		assert.Equal(t, want, IntKey(info, key), key)
	}
	assert.Zero(t, IntKey(nil, "i"))
}

func TestCallID(t *testing.T) {
	a, b := CallID("call_"), CallID("call_")
	assert.Regexp(t, regexp.MustCompile(`^call_[0-9a-f]{24}$`), a)
	assert.NotEqual(t, a, b)
	assert.Regexp(t, regexp.MustCompile(`^toolu_[0-9a-f]{24}$`), CallID("toolu_"))
}

// model is an llms.Model whose GenerateContent runs gen.
type model struct {
	gen func() (*llms.ContentResponse, error)
}

func (m model) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	return m.gen()
}

func (m model) Call(context.Context, string, ...llms.CallOption) (string, error) {
	return "", errors.New("not used")
}

func TestGenerate(t *testing.T) {
	want := &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "hi"}}}
	resp, err := Generate(context.Background(), model{func() (*llms.ContentResponse, error) { return want, nil }}, nil)
	require.NoError(t, err)
	assert.Same(t, want, resp)

	boom := errors.New("boom")
	_, err = Generate(context.Background(), model{func() (*llms.ContentResponse, error) { return nil, boom }}, nil)
	assert.ErrorIs(t, err, boom)

	resp, err = Generate(context.Background(), model{func() (*llms.ContentResponse, error) {
		var choice *llms.ContentChoice
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: choice.Content}}}, nil
	}}, nil)
	assert.Nil(t, resp)
	require.ErrorIs(t, err, wiretap.ErrMalformed)
	assert.Contains(t, err.Error(), "nil pointer dereference")
}
