package tools

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepgraph/deepgraph/schemas"
)

// Errors a Collection returns; match them with errors.Is.
var (
	// ErrDuplicateTool: two tools of a collection have the same name.
	ErrDuplicateTool = errors.New("tools: duplicate tool name")
	// ErrUnknownTool: a name does not belong to any tool of the collection.
	ErrUnknownTool = errors.New("tools: unknown tool")
)

// PanicError is the error Execute returns when a tool panicked. The model
// sees only that the tool failed with an internal error; Value and Stack are
// for the program's logs.
type PanicError struct {
	Tool  string // the tool that panicked
	Value any    // the value passed to panic
	Stack []byte // the goroutine's stack at the panic
}

// Error names the tool and the panic value.
func (e *PanicError) Error() string {
	return fmt.Sprintf("tools: tool %q panicked: %v", e.Tool, e.Value)
}

// maxErrorText caps the text of an infrastructure error shown to the model.
const maxErrorText = 2000

// Collection is an immutable set of tools with unique names, kept in the
// order they were given. It is safe for concurrent use.
type Collection struct {
	tools    []Tool
	index    map[string]int
	resolved []*jsonschema.Resolved // per tool; nil when it takes no parameters
}

// NewCollection builds a collection of ts, in that order. It fails if a tool
// is nil, has an invalid name, a name already taken (ErrDuplicateTool, naming
// it) or a parameters schema that does not resolve.
func NewCollection(ts ...Tool) (*Collection, error) {
	c := &Collection{index: make(map[string]int, len(ts))}
	for i, t := range ts {
		if t == nil {
			return nil, fmt.Errorf("tools: NewCollection: tool #%d is nil", i)
		}
		name := t.Name()
		if err := CheckName(name); err != nil {
			return nil, err
		}
		if _, dup := c.index[name]; dup {
			return nil, fmt.Errorf("%w %q: each tool in a collection needs its own name", ErrDuplicateTool, name)
		}
		var rs *jsonschema.Resolved
		if p := t.Parameters(); p != nil {
			var err error
			if rs, err = p.Resolve(nil); err != nil {
				return nil, fmt.Errorf("tools: tool %q has an invalid parameters schema: %w", name, err)
			}
		}
		c.index[name] = len(c.tools)
		c.tools = append(c.tools, t)
		c.resolved = append(c.resolved, rs)
	}
	return c, nil
}

// Len is the number of tools.
func (c *Collection) Len() int {
	if c == nil {
		return 0
	}
	return len(c.tools)
}

// Get returns the tool called name.
func (c *Collection) Get(name string) (Tool, bool) {
	if c == nil {
		return nil, false
	}
	i, ok := c.index[name]
	if !ok {
		return nil, false
	}
	return c.tools[i], true
}

// Tools returns the tools in collection order.
func (c *Collection) Tools() []Tool {
	if c == nil {
		return nil
	}
	return append([]Tool(nil), c.tools...)
}

// Names returns the tool names in collection order.
func (c *Collection) Names() []string {
	if c == nil {
		return nil
	}
	names := make([]string, len(c.tools))
	for i, t := range c.tools {
		names[i] = t.Name()
	}
	return names
}

// Defs describes the tools to a model, in collection order (stable from call
// to call, which keeps provider prompt caches warm).
func (c *Collection) Defs() []schemas.ToolDef {
	if c == nil {
		return nil
	}
	defs := make([]schemas.ToolDef, len(c.tools))
	for i, t := range c.tools {
		defs[i] = Def(t)
	}
	return defs
}

// Subset returns a collection of the named tools, in the order given. An
// unknown name fails with ErrUnknownTool, naming it and the available tools;
// a name given twice fails with ErrDuplicateTool.
func (c *Collection) Subset(names ...string) (*Collection, error) {
	ts := make([]Tool, 0, len(names))
	for _, name := range names {
		t, ok := c.Get(name)
		if !ok {
			return nil, fmt.Errorf("%w %q; available tools: %s", ErrUnknownTool, name, c.available())
		}
		ts = append(ts, t)
	}
	return NewCollection(ts...)
}

func (c *Collection) available() string {
	if c.Len() == 0 {
		return "(none)"
	}
	return strings.Join(c.Names(), ", ")
}

// Execute runs call and returns a Result fit to show the model, whatever
// happens:
//   - an unknown tool, arguments that are not a JSON object or do not match
//     the tool's schema: a failed Result naming the problem (and, for an
//     unknown tool, the available tools); the error is nil — the model made
//     the mistake and can correct it;
//   - the tool's Run returned an error (infrastructure failure): a failed
//     Result saying "<tool> failed: <error>" (unless the tool set its own
//     Error), and the error, wrapped with the tool name;
//   - the tool panicked: a failed Result saying the tool failed with an
//     internal error, and a *PanicError carrying the value and stack.
//
// If ctx is already done, Execute does not run the tool and returns ctx's
// error. An agent loop stops when ctx is done and otherwise logs the error
// and feeds the Result to the model.
func (c *Collection) Execute(ctx context.Context, call schemas.ToolCall) (res Result, err error) {
	if err := ctx.Err(); err != nil {
		return Failf("the call to %s was not run: the run was cancelled", call.Name), err
	}
	i, ok := -1, false
	if c != nil {
		i, ok = c.index[call.Name]
	}
	if !ok {
		return Failf("unknown tool %q; available tools: %s", call.Name, c.available()), nil
	}
	t := c.tools[i]
	args := normalizeArgs(call.Arguments)
	v, perr := parseObject(args)
	if perr != nil {
		return Failf("invalid arguments for %s: %v", call.Name, perr), nil
	}
	if rs := c.resolved[i]; rs != nil {
		if verr := validate(rs, v); verr != nil {
			return Failf("invalid arguments for %s: %v", call.Name, verr), nil
		}
	}
	defer func() {
		if p := recover(); p != nil {
			res = Failf("%s failed with an internal error; try a different approach", call.Name)
			err = &PanicError{Tool: call.Name, Value: p, Stack: debug.Stack()}
		}
	}()
	res, err = t.Run(ctx, args)
	if err != nil {
		if res.Error == "" {
			res.Error = truncateText(fmt.Sprintf("%s failed: %v", call.Name, err), maxErrorText)
		}
		return res, fmt.Errorf("tools: %s: %w", call.Name, err)
	}
	return res, nil
}
