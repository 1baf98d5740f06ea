package tools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type greetArgs struct {
	Name  string   `json:"name" jsonschema:"Who to greet."`
	Times *int     `json:"times,omitempty" jsonschema:"How often."`
	Tags  []string `json:"tags,omitempty"`
	Style string   `json:"style,omitempty"`
}

func (greetArgs) ExtendSchema(s *jsonschema.Schema) {
	s.Properties["style"].Enum = []any{"plain", "loud"}
	s.Properties["times"].Minimum = jsonschema.Ptr(1.0)
}

func greetTool(t *testing.T) *FuncTool[greetArgs] {
	t.Helper()
	tool, err := Func("greet", "Greets someone.", func(_ context.Context, a greetArgs) (Result, error) {
		n := 1
		if a.Times != nil {
			n = *a.Times
		}
		out := ""
		for range n {
			out += "hello " + a.Name + "\n"
		}
		return Text(out), nil
	})
	require.NoError(t, err)
	return tool
}

func TestFuncSchemaDerivation(t *testing.T) {
	tool := greetTool(t)
	s := tool.Parameters()
	require.NotNil(t, s)
	assert.Equal(t, "object", s.Type)
	assert.Equal(t, []string{"name"}, s.Required, "only fields without omitempty are required")
	require.Contains(t, s.Properties, "name")
	assert.Equal(t, "Who to greet.", s.Properties["name"].Description)
	assert.Equal(t, "How often.", s.Properties["times"].Description)
	assert.Equal(t, []any{"plain", "loud"}, s.Properties["style"].Enum, "SchemaExtender applied")
	require.NotNil(t, s.AdditionalProperties)

	def := Def(tool)
	assert.Equal(t, "greet", def.Name)
	assert.Equal(t, "Greets someone.", def.Description)
	b, err := json.Marshal(def)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"additionalProperties":false`)

	// Parameters returns a copy: changing it does not change the tool.
	s.Properties["name"].Description = "changed"
	assert.Equal(t, "Who to greet.", tool.Parameters().Properties["name"].Description)
}

func TestFuncDecode(t *testing.T) {
	tool := greetTool(t)
	tests := []struct {
		name    string
		args    string
		want    string // output on success
		wantErr string // substring of the failure
	}{
		{name: "valid", args: `{"name":"Ada"}`, want: "hello Ada\n"},
		{name: "optional field", args: `{"name":"Ada","times":2}`, want: "hello Ada\nhello Ada\n"},
		{name: "null optionals are absent", args: `{"name":"Ada","times":null,"style":null,"tags":null}`, want: "hello Ada\n"},
		{name: "null required is not", args: `{"name":null}`, wantErr: `property "name"`},
		{name: "whitespace around", args: " \n{\"name\":\"Bo\"} \n", want: "hello Bo\n"},
		{name: "missing required", args: `{}`, wantErr: `missing properties: ["name"]`},
		{name: "empty means {}", args: ``, wantErr: `missing properties: ["name"]`},
		{name: "null means {}", args: `null`, wantErr: `missing properties: ["name"]`},
		{name: "wrong type", args: `{"name":3}`, wantErr: `property "name"`},
		{name: "unknown field", args: `{"name":"x","nme":"y"}`, wantErr: `additional properties ["nme"]`},
		{name: "differently cased field", args: `{"Name":"x"}`, wantErr: "Name"},
		{name: "enum", args: `{"name":"x","style":"quiet"}`, wantErr: `property "style": enum`},
		{name: "minimum", args: `{"name":"x","times":0}`, wantErr: `property "times": minimum`},
		{name: "array item type", args: `{"name":"x","tags":[1]}`, wantErr: `property "tags[]"`},
		{name: "malformed", args: `{"name":`, wantErr: "not valid JSON"},
		{name: "trailing data", args: `{"name":"x"} {"name":"y"}`, wantErr: "unexpected data after"},
		{name: "not an object", args: `["x"]`, wantErr: "must be a JSON object, got an array"},
		{name: "string", args: `"x"`, wantErr: "must be a JSON object, got a string"},
		{name: "float into int", args: `{"name":"x","times":1.5}`, wantErr: "times"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tool.Run(context.Background(), json.RawMessage(tt.args))
			require.NoError(t, err, "bad arguments are the model's failure, not an error")
			if tt.wantErr != "" {
				require.True(t, res.Failed(), "output: %q", res.Output)
				assert.Contains(t, res.Error, "invalid arguments for greet")
				assert.Contains(t, res.Error, tt.wantErr)
				return
			}
			require.False(t, res.Failed(), res.Error)
			assert.Equal(t, tt.want, res.Output)
		})
	}
}

func TestFuncConstructionErrors(t *testing.T) {
	fn := func(context.Context, greetArgs) (Result, error) { return Result{}, nil }
	_, err := Func("bad name", "", fn)
	assert.ErrorContains(t, err, "invalid tool name")
	_, err = Func("9lives", "", fn)
	assert.ErrorContains(t, err, "invalid tool name")
	_, err = Func[greetArgs]("ok", "", nil)
	assert.ErrorContains(t, err, "fn is nil")
	_, err = Func("ok", "", func(context.Context, string) (Result, error) { return Result{}, nil })
	assert.ErrorContains(t, err, "must be a struct")
	_, err = Func("ok", "", func(context.Context, struct{ C chan int }) (Result, error) { return Result{}, nil })
	assert.ErrorContains(t, err, "inferring the parameters schema")
	assert.Panics(t, func() { MustFunc("bad name", "", fn) })

	tool, err := Func("no_args", "", func(context.Context, struct{}) (Result, error) { return Text("ok"), nil })
	require.NoError(t, err)
	res, err := tool.Run(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, "ok", res.Output)
}

func TestResultContent(t *testing.T) {
	assert.Equal(t, "(no output)", Result{}.Content())
	assert.Equal(t, "out", Text("out").Content())
	assert.Equal(t, "Error: bad 3", Failf("bad %d", 3).Content())
	assert.Equal(t, "Error: exit status 1\n\npartial", Result{Output: "partial", Error: "exit status 1"}.Content())
	assert.False(t, Text("x").Failed())
	assert.True(t, Failf("x").Failed())
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a", "_x", "web_search", "mcp-server_tool1", "A", "files.read_file"} {
		assert.NoError(t, CheckName(ok), ok)
	}
	long := "a"
	for len(long) < 65 {
		long += "a"
	}
	for _, bad := range []string{"", "1a", "a b", ".a", "a/b", "é", long} {
		assert.Error(t, CheckName(bad), bad)
	}
}
