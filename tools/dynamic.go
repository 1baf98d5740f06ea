package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// Dynamic supplies tools that can change while an agent runs, such as the
// tools of an MCP server, which may add or remove tools at any time.
type Dynamic interface {
	// Collection returns the tools as they are now. An agent calls it
	// before each step, so it must be cheap: keep the collection and
	// rebuild it only when the tools change. An error leaves the agent with
	// the tools it had.
	Collection(ctx context.Context) (*Collection, error)
}

// Merge returns one collection of the tools of cs, in order. A name found
// in two of them fails with ErrDuplicateTool. Parameter schemas are not
// resolved again, so merging is cheap enough to do at every agent step.
func Merge(cs ...*Collection) (*Collection, error) {
	n := 0
	for _, c := range cs {
		n += c.Len()
	}
	out := &Collection{tools: make([]Tool, 0, n), index: make(map[string]int, n), resolved: make([]*jsonschema.Resolved, 0, n),
		timeouts: make([]time.Duration, 0, n)}
	for _, c := range cs {
		if c == nil {
			continue
		}
		for i, t := range c.tools {
			name := t.Name()
			if _, dup := out.index[name]; dup {
				return nil, fmt.Errorf("%w %q: two tool sets both have it", ErrDuplicateTool, name)
			}
			out.index[name] = len(out.tools)
			out.tools = append(out.tools, t)
			out.resolved = append(out.resolved, c.resolved[i])
			out.timeouts = append(out.timeouts, c.timeouts[i])
		}
	}
	return out, nil
}
