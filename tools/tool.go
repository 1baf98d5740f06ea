package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepgraph/deepgraph/schemas"
)

// Tool is something a model can call.
//
// Implementations must be safe for concurrent use: an agent may run several
// calls of one tool at the same time.
type Tool interface {
	// Name is the identifier the model calls the tool by. It matches
	// ^[A-Za-z_][A-Za-z0-9_.-]{0,63}$: what Gemini accepts, and, but for
	// the '.' of MCP tools ("server.tool"), what OpenAI and Anthropic
	// accept; their adapters send a '.' in another form and map it back.
	Name() string
	// Description tells the model what the tool does and when to use it.
	Description() string
	// Parameters is the JSON Schema of the arguments object; nil means the
	// tool takes no arguments. Callers must not modify the returned schema.
	Parameters() *jsonschema.Schema
	// Run executes one call. args is the JSON object the model produced; it
	// is untrusted and may not match Parameters (tools built with Func
	// validate it; a Collection also validates it before calling Run,
	// reading a null optional property as absent, and passes it on as is).
	//
	// The contract (see the package documentation):
	//   - success: a Result with Error empty;
	//   - a failure the model caused or can react to (a missing file, an
	//     ambiguous edit, a command that exited non-zero): a Result with
	//     Error set, and a nil error;
	//   - an infrastructure failure (the run was cancelled, a provider is
	//     down, the disk failed): a non-nil error. The Result may still
	//     carry partial output.
	Run(ctx context.Context, args json.RawMessage) (Result, error)
}

// Result is what a tool call produced, in the form the model will see.
type Result struct {
	// Output is the text of the result. On failure it may hold partial
	// output (the output of a command that exited non-zero).
	Output string `json:"output,omitempty"`
	// Error, when not empty, says the call failed and why, in words the
	// model can act on ("old_str occurs 3 times in main.go; …").
	Error string `json:"error,omitempty"`
	// Images are pictures the tool produced (a viewed PNG, a screenshot).
	Images []schemas.Image `json:"images,omitempty"`
	// Sources are the pages or documents Output came from (search results,
	// a fetched page, a research report's sources). An agent gives each a
	// stable label the model cites, and checks its final answer's
	// citations against them.
	Sources []Source `json:"sources,omitempty"`
}

// Source is a page or document a tool's result came from.
type Source struct {
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
}

// Text returns a successful Result holding output.
func Text(output string) Result { return Result{Output: output} }

// Failf returns a failed Result whose Error is formatted like fmt.Sprintf.
func Failf(format string, args ...any) Result {
	return Result{Error: fmt.Sprintf(format, args...)}
}

// Failed reports whether the call failed (Error is not empty).
func (r Result) Failed() bool { return r.Error != "" }

// Content renders the Result as the text of the tool message the model
// reads:
//   - success: Output, or "(no output)" when Output is empty;
//   - failure: "Error: " + Error, followed by a blank line and Output when
//     there is partial output.
func (r Result) Content() string {
	if r.Error == "" {
		if r.Output == "" {
			return "(no output)"
		}
		return r.Output
	}
	if r.Output == "" {
		return "Error: " + r.Error
	}
	return "Error: " + r.Error + "\n\n" + r.Output
}

// Message builds the tool message answering call: Content as its text and
// Images attached.
func (r Result) Message(call schemas.ToolCall) schemas.Message {
	m := schemas.ToolResultMessage(call, r.Content())
	m.Images = r.Images
	return m
}

// Def describes t to a model.
func Def(t Tool) schemas.ToolDef {
	return schemas.ToolDef{Name: t.Name(), Description: t.Description(), Parameters: t.Parameters()}
}

// validName is what Gemini accepts (a letter or underscore first; letters,
// digits, '_', '.', '-'), and without the '.' what OpenAI
// (^[a-zA-Z0-9_-]{1,64}$) and Anthropic accept.
var validName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`) })

// CheckName reports whether name is usable as a tool name with every
// provider, and if not, says why.
func CheckName(name string) error {
	if !validName().MatchString(name) {
		return fmt.Errorf("tools: invalid tool name %q: use 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or '_'", name)
	}
	return nil
}

// The names of the built-in tools.
const (
	WebSearchName     = "web_search"
	FetchPageName     = "fetch_page"
	EditorName        = "str_replace_editor"
	PythonExecuteName = "python_execute"
	BashName          = "bash"
	AskHumanName      = "ask_human"
	PlanningName      = "planning"
	TerminateName     = "terminate"
)
