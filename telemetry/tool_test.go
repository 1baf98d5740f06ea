package telemetry_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/telemetry"
	"github.com/deepgraph/deepgraph/tools"
)

// A traced tool keeps its own call bound (tools.Bounded), and a tool
// without one does not gain one: a collection bounds the traced tools'
// calls as it would the tools'.
func TestToolKeepsBounded(t *testing.T) {
	tel, exp, _ := newTel(telemetry.Options{})
	plain, err := tools.Func("plain", "a tool", func(context.Context, struct{}) (tools.Result, error) {
		return tools.Result{Output: "ok"}, nil
	})
	require.NoError(t, err)

	for _, d := range []time.Duration{0, 3 * time.Hour} {
		traced := tel.Tool(tools.WithTimeout(plain, d))
		b, ok := traced.(tools.Bounded)
		require.True(t, ok, "a bound of %s is kept", d)
		assert.Equal(t, d, b.CallTimeout())
	}
	_, ok := tel.Tool(plain).(tools.Bounded)
	assert.False(t, ok, "a tool without its own bound gets the collection's")

	// The bounded wrapper still traces: a call through a collection with a
	// short default is not cut short by it, and makes its span.
	slow, err := tools.Func("slow", "a slow tool", func(ctx context.Context, _ struct{}) (tools.Result, error) {
		select {
		case <-time.After(50 * time.Millisecond):
			return tools.Result{Output: "done"}, nil
		case <-ctx.Done():
			return tools.Result{}, ctx.Err()
		}
	})
	require.NoError(t, err)
	c, err := tools.NewCollection(tel.Tool(tools.WithTimeout(slow, 0)))
	require.NoError(t, err)
	res, err := c.WithCallTimeout(time.Millisecond).Execute(context.Background(), schemas.ToolCall{ID: "1", Name: "slow", Arguments: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, "done", res.Output, "the tool's own bound (none) wins over the collection's 1ms: %+v", res)
	spans := exp.GetSpans()
	require.Len(t, spans, 1)
	assert.Equal(t, "execute_tool slow", spans[0].Name)
}
