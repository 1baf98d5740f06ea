package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

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

// DefaultCallTimeout bounds one call that a Collection runs, unless the
// tool sets its own bound (WithTimeout, or the Bounded interface) or the
// collection another (WithCallTimeout).
const DefaultCallTimeout = 2 * time.Minute

// defaultStopWait is how long Execute waits, once a call's context is
// done, for the tool to return before it abandons the call.
const defaultStopWait = 5 * time.Second

// Bounded is implemented by tools that set the bound of their own calls
// instead of the collection's: longer for a tool that legitimately runs
// long, none (0 or less) for one that waits for a person or bounds itself.
// WithTimeout gives any tool a bound.
type Bounded interface {
	Tool
	// CallTimeout is how long one call may run; 0 or less means no bound.
	CallTimeout() time.Duration
}

// WithTimeout returns t with its calls bounded by d in any collection; d of
// 0 or less means no bound (for a tool that waits for a person, or whose
// run is bounded as a whole).
func WithTimeout(t Tool, d time.Duration) Tool {
	if b, ok := t.(*boundedTool); ok {
		t = b.Tool
	}
	return &boundedTool{Tool: t, timeout: d}
}

type boundedTool struct {
	Tool
	timeout time.Duration
}

func (b *boundedTool) CallTimeout() time.Duration { return b.timeout }

// Collection is an immutable set of tools with unique names, kept in the
// order they were given. It is safe for concurrent use.
type Collection struct {
	tools    []Tool
	index    map[string]int
	resolved []*jsonschema.Resolved // per tool; nil when it takes no parameters
	timeouts []time.Duration        // per tool; 0 means no bound
	stopWait time.Duration          // 0 means defaultStopWait
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
		c.timeouts = append(c.timeouts, callTimeout(t, DefaultCallTimeout))
	}
	return c, nil
}

// callTimeout is the bound of t's calls in a collection whose bound is def.
func callTimeout(t Tool, def time.Duration) time.Duration {
	d := def
	if b, ok := t.(Bounded); ok {
		d = b.CallTimeout()
	}
	return max(d, 0)
}

// WithCallTimeout returns a copy of c whose calls are bounded by d (0 or
// less: no bound), except those of tools that set their own bound
// (Bounded, WithTimeout). A call that runs out of time is stopped (its
// context is cancelled) and the model is told it did not finish. New
// collections bound calls by DefaultCallTimeout.
func (c *Collection) WithCallTimeout(d time.Duration) *Collection {
	if c == nil {
		return nil
	}
	out := *c
	out.timeouts = make([]time.Duration, len(c.tools))
	for i, t := range c.tools {
		out.timeouts[i] = callTimeout(t, d)
	}
	return &out
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

// Subset returns a collection of the named tools, in the order given, with
// the bounds their calls have in c. An unknown name fails with
// ErrUnknownTool, naming it and the available tools; a name given twice
// fails with ErrDuplicateTool.
func (c *Collection) Subset(names ...string) (*Collection, error) {
	ts := make([]Tool, 0, len(names))
	timeouts := make([]time.Duration, 0, len(names))
	for _, name := range names {
		t, ok := c.Get(name)
		if !ok {
			return nil, fmt.Errorf("%w %q; available tools: %s", ErrUnknownTool, name, c.available())
		}
		ts = append(ts, t)
		timeouts = append(timeouts, c.timeouts[c.index[name]])
	}
	out, err := NewCollection(ts...)
	if err != nil {
		return nil, err
	}
	out.timeouts, out.stopWait = timeouts, c.stopWait
	return out, nil
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
//     internal error, and a *PanicError carrying the value and stack;
//   - the call ran out of its time (DefaultCallTimeout unless the tool or
//     the collection sets another bound): its context is cancelled and a
//     failed Result says it did not finish; the error is nil;
//   - ctx ended during the call: a failed Result and ctx's error.
//
// A tool that ignores its cancelled context is not waited for beyond a
// few seconds: Execute returns as above and the call is abandoned, its
// result discarded when it ends (a goroutine lives on until then). If ctx
// is already done, Execute does not run the tool and returns ctx's error.
// An agent loop stops when ctx is done and otherwise logs the error and
// feeds the Result to the model.
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
	res, err = c.run(ctx, i, call.Name, args)
	if err != nil {
		if res.Error == "" {
			res.Error = truncateText(fmt.Sprintf("%s failed: %v", call.Name, err), maxErrorText)
		}
		return res, fmt.Errorf("tools: %s: %w", call.Name, err)
	}
	return res, nil
}

// ran is what one tool call returned.
type ran struct {
	res Result
	err error
}

// run calls tool i within its bound. The tool runs in a goroutine so that
// a call stuck in a tool that ignores its context can be abandoned.
func (c *Collection) run(ctx context.Context, i int, name string, args json.RawMessage) (Result, error) {
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	timeout := c.timeouts[i]
	if timeout > 0 {
		callCtx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	done := make(chan ran, 1)
	go func() {
		var r ran
		defer func() {
			if p := recover(); p != nil {
				r = ran{Failf("%s failed with an internal error; try a different approach", name),
					&PanicError{Tool: name, Value: p, Stack: debug.Stack()}}
			}
			done <- r
		}()
		r.res, r.err = c.tools[i].Run(callCtx, args)
	}()
	var r ran
	select {
	case r = <-done:
	case <-callCtx.Done():
		wait := c.stopWait
		if wait <= 0 {
			wait = defaultStopWait
		}
		stop := time.NewTimer(wait)
		select {
		case r = <-done:
		case <-stop.C:
			r = ran{err: callCtx.Err()}
		}
		stop.Stop()
	}
	switch {
	case ctx.Err() != nil:
		return Failf("the call to %s was stopped: the run was cancelled", name), ctx.Err()
	case callCtx.Err() != nil && r.err != nil:
		return Failf("%s did not finish within %s and was stopped; try a smaller step, or another way", name, timeout), nil
	}
	return r.res, r.err
}
