package tools

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/schemas"
)

type echoArgs struct {
	Text string `json:"text"`
}

func echoTool(name string) Tool {
	return MustFunc(name, "Echoes text.", func(_ context.Context, a echoArgs) (Result, error) {
		return Text(a.Text), nil
	})
}

// rawTool is a hand-written Tool (not built with Func).
type rawTool struct {
	name   string
	params *jsonschema.Schema
	run    func(context.Context, json.RawMessage) (Result, error)
}

func (r rawTool) Name() string                   { return r.name }
func (r rawTool) Description() string            { return "raw" }
func (r rawTool) Parameters() *jsonschema.Schema { return r.params }
func (r rawTool) Run(ctx context.Context, a json.RawMessage) (Result, error) {
	return r.run(ctx, a)
}

func call(name, args string) schemas.ToolCall {
	return schemas.ToolCall{ID: "c1", Name: name, Arguments: json.RawMessage(args)}
}

func TestNewCollectionRejects(t *testing.T) {
	_, err := NewCollection(echoTool("a"), echoTool("b"), echoTool("a"))
	require.ErrorIs(t, err, ErrDuplicateTool)
	assert.ErrorContains(t, err, `"a"`)

	_, err = NewCollection(echoTool("a"), nil)
	assert.ErrorContains(t, err, "tool #1 is nil")

	_, err = NewCollection(rawTool{name: "has space"})
	assert.ErrorContains(t, err, "invalid tool name")

	bad := &jsonschema.Schema{Type: "object", Ref: "#/$defs/missing"}
	_, err = NewCollection(rawTool{name: "bad_schema", params: bad})
	assert.ErrorContains(t, err, `tool "bad_schema" has an invalid parameters schema`)
}

func TestCollectionLookupAndDefs(t *testing.T) {
	c, err := NewCollection(echoTool("zeta"), echoTool("alpha"), echoTool("mid"))
	require.NoError(t, err)
	assert.Equal(t, 3, c.Len())
	assert.Equal(t, []string{"zeta", "alpha", "mid"}, c.Names(), "insertion order")
	defs := c.Defs()
	require.Len(t, defs, 3)
	assert.Equal(t, "zeta", defs[0].Name)
	assert.Equal(t, "mid", defs[2].Name)
	assert.Equal(t, defs, c.Defs(), "stable from call to call")
	tool, ok := c.Get("alpha")
	require.True(t, ok)
	assert.Equal(t, "alpha", tool.Name())
	_, ok = c.Get("nope")
	assert.False(t, ok)
	assert.Len(t, c.Tools(), 3)

	var nilC *Collection
	assert.Equal(t, 0, nilC.Len())
	assert.Nil(t, nilC.Defs())
	res, err := nilC.Execute(context.Background(), call("x", `{}`))
	require.NoError(t, err)
	assert.Contains(t, res.Error, "available tools: (none)")
}

func TestCollectionSubset(t *testing.T) {
	c, err := NewCollection(echoTool("a"), echoTool("b"), echoTool("c"))
	require.NoError(t, err)

	sub, err := c.Subset("c", "a")
	require.NoError(t, err)
	assert.Equal(t, []string{"c", "a"}, sub.Names(), "the order asked for")

	_, err = c.Subset("a", "web_serch")
	require.ErrorIs(t, err, ErrUnknownTool)
	assert.ErrorContains(t, err, `"web_serch"`)
	assert.ErrorContains(t, err, "available tools: a, b, c")

	_, err = c.Subset("a", "a")
	assert.ErrorIs(t, err, ErrDuplicateTool)

	empty, err := c.Subset()
	require.NoError(t, err)
	assert.Equal(t, 0, empty.Len())
}

func TestCollectionExecute(t *testing.T) {
	boom := errors.New("provider down")
	c, err := NewCollection(
		echoTool("echo"),
		rawTool{name: "panics", run: func(context.Context, json.RawMessage) (Result, error) { panic("kaboom") }},
		rawTool{name: "infra", run: func(context.Context, json.RawMessage) (Result, error) { return Result{}, boom }},
		rawTool{name: "infra_own_msg", run: func(context.Context, json.RawMessage) (Result, error) {
			return Result{Output: "partial", Error: "stopped early"}, boom
		}},
		rawTool{name: "raw_strict", params: &jsonschema.Schema{
			Type: "object", Required: []string{"n"},
			Properties: map[string]*jsonschema.Schema{"n": {Type: "integer"}},
		}, run: func(_ context.Context, a json.RawMessage) (Result, error) { return Text(string(a)), nil }},
	)
	require.NoError(t, err)

	tests := []struct {
		name       string
		call       schemas.ToolCall
		wantOutput string
		wantFail   []string // substrings of Result.Error
		wantErr    error
		wantPanic  bool
	}{
		{name: "ok", call: call("echo", `{"text":"hi"}`), wantOutput: "hi"},
		{name: "unknown tool", call: call("ehco", `{}`), wantFail: []string{`unknown tool "ehco"`, "available tools: echo, panics, infra, infra_own_msg, raw_strict"}},
		{name: "malformed JSON", call: call("echo", `{"text":`), wantFail: []string{"invalid arguments for echo", "not valid JSON"}},
		{name: "schema violation", call: call("echo", `{"text":1}`), wantFail: []string{"invalid arguments for echo", `property "text"`}},
		{name: "not an object", call: call("echo", `42`), wantFail: []string{"must be a JSON object, got a number"}},
		{name: "hand-written tool validated too", call: call("raw_strict", `{"n":"x"}`), wantFail: []string{"invalid arguments for raw_strict", `property "n"`}},
		{name: "hand-written tool gets normalized args", call: call("raw_strict", ` {"n":1} `), wantOutput: `{"n":1}`},
		{name: "panic", call: call("panics", `{}`), wantFail: []string{"panics failed with an internal error"}, wantPanic: true},
		{name: "infrastructure error", call: call("infra", ``), wantFail: []string{"infra failed: provider down"}, wantErr: boom},
		{name: "tool's own message kept", call: call("infra_own_msg", `{}`), wantOutput: "partial", wantFail: []string{"stopped early"}, wantErr: boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Execute(context.Background(), tt.call)
			switch {
			case tt.wantPanic:
				var pe *PanicError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, "panics", pe.Tool)
				assert.Equal(t, "kaboom", pe.Value)
				assert.NotEmpty(t, pe.Stack)
				assert.NotContains(t, res.Error, "kaboom", "panic details stay out of the model's view")
			case tt.wantErr != nil:
				require.ErrorIs(t, err, tt.wantErr)
				assert.ErrorContains(t, err, tt.call.Name)
			default:
				require.NoError(t, err)
			}
			assert.Equal(t, tt.wantOutput, res.Output)
			if len(tt.wantFail) == 0 {
				assert.False(t, res.Failed(), res.Error)
			}
			for _, s := range tt.wantFail {
				assert.Contains(t, res.Error, s)
			}
		})
	}
}

func TestCollectionExecuteCancelled(t *testing.T) {
	ran := false
	c, err := NewCollection(rawTool{name: "t", run: func(context.Context, json.RawMessage) (Result, error) {
		ran = true
		return Text("x"), nil
	}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := c.Execute(ctx, call("t", `{}`))
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, res.Failed())
	assert.False(t, ran, "a cancelled run does not start tools")
}

func TestResultMessage(t *testing.T) {
	cl := call("echo", `{}`)
	m := Result{Output: "seen", Images: []schemas.Image{{MIMEType: "image/png", Data: []byte{1}}}}.Message(cl)
	assert.Equal(t, schemas.Tool, m.Role)
	assert.Equal(t, "c1", m.ToolCallID)
	assert.Equal(t, "echo", m.Name)
	assert.Equal(t, "seen", m.Content)
	assert.Len(t, m.Images, 1)
	assert.Equal(t, "Error: no", Failf("no").Message(cl).Content)
}

func FuzzCollectionExecute(f *testing.F) {
	for _, seed := range []string{`{"text":"x"}`, ``, `null`, `{"text":`, `[]`, `{"text":"x","y":1}`, `{"text":"\u0000"}`, `1e999`, `{"text":"x"}]`} {
		f.Add(seed)
	}
	c, err := NewCollection(echoTool("echo"), NewTerminate())
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, args string) {
		for _, name := range []string{"echo", TerminateName} {
			res, err := c.Execute(context.Background(), call(name, args))
			require.NoError(t, err)
			if res.Failed() {
				continue
			}
			// Whatever was accepted is a valid JSON object, decoded faithfully.
			var a echoArgs
			require.NoError(t, json.Unmarshal(normalizeArgs(json.RawMessage(args)), &a), "accepted %q", args)
			if name == "echo" {
				assert.Equal(t, a.Text, res.Output)
			}
		}
	})
}
