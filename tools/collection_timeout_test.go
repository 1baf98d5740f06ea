package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deadlineTool reports the time left before its context's deadline, or
// "none".
func deadlineTool(name string) rawTool {
	return rawTool{name: name, run: func(ctx context.Context, _ json.RawMessage) (Result, error) {
		d, ok := ctx.Deadline()
		if !ok {
			return Text("none"), nil
		}
		return Text(fmt.Sprint(time.Until(d).Round(time.Minute))), nil
	}}
}

func TestCollectionBoundsEveryCall(t *testing.T) {
	c, err := NewCollection(deadlineTool("plain"), WithTimeout(deadlineTool("own"), 7*time.Minute), WithTimeout(deadlineTool("unbounded"), 0))
	require.NoError(t, err)
	out := func(c *Collection, name string) string {
		res, err := c.Execute(context.Background(), call(name, `{}`))
		require.NoError(t, err)
		return res.Output
	}
	assert.Equal(t, "2m0s", out(c, "plain"), "DefaultCallTimeout")
	assert.Equal(t, "7m0s", out(c, "own"), "a tool's own bound wins")
	assert.Equal(t, "none", out(c, "unbounded"))

	c3 := c.WithCallTimeout(3 * time.Minute)
	assert.Equal(t, "3m0s", out(c3, "plain"))
	assert.Equal(t, "7m0s", out(c3, "own"))
	assert.Equal(t, "2m0s", out(c, "plain"), "the original is unchanged")
	assert.Equal(t, "none", out(c.WithCallTimeout(0), "plain"))

	sub, err := c3.Subset("plain")
	require.NoError(t, err)
	assert.Equal(t, "3m0s", out(sub, "plain"), "a subset keeps the bounds")
	m, err := Merge(c3, MustCollection(t, deadlineTool("other")))
	require.NoError(t, err)
	assert.Equal(t, "3m0s", out(m, "plain"), "a merge keeps each tool's bound")
	assert.Equal(t, "2m0s", out(m, "other"))
}

// TestPersonWaitingToolsAreUnbounded: ask_human waits for a person, for as
// long as they take.
func TestPersonWaitingToolsAreUnbounded(t *testing.T) {
	ask, err := NewAskHuman(AskHumanOptions{Asker: askerFunc(func(ctx context.Context, _ string) (string, error) {
		if _, ok := ctx.Deadline(); ok {
			return "bounded", nil
		}
		return "unbounded", nil
	})})
	require.NoError(t, err)
	res, err := MustCollection(t, ask).WithCallTimeout(time.Minute).Execute(context.Background(), call(AskHumanName, `{"question":"q?"}`))
	require.NoError(t, err)
	assert.Contains(t, res.Output, "unbounded")
}

type askerFunc func(context.Context, string) (string, error)

func (f askerFunc) Ask(ctx context.Context, q string) (string, error) { return f(ctx, q) }

func MustCollection(t *testing.T, ts ...Tool) *Collection {
	t.Helper()
	c, err := NewCollection(ts...)
	require.NoError(t, err)
	return c
}

func TestCollectionCallTimeout(t *testing.T) {
	t.Run("a tool that honours its context", func(t *testing.T) {
		c := MustCollection(t, rawTool{name: "slow", run: func(ctx context.Context, _ json.RawMessage) (Result, error) {
			<-ctx.Done()
			return Result{}, ctx.Err()
		}}).WithCallTimeout(20 * time.Millisecond)
		res, err := c.Execute(context.Background(), call("slow", `{}`))
		require.NoError(t, err, "a timed-out call is the model's to handle, not the end of the run")
		assert.True(t, res.Failed())
		assert.Contains(t, res.Error, "slow did not finish within 20ms and was stopped")
	})
	t.Run("a tool that ignores its context is abandoned", func(t *testing.T) {
		release := make(chan struct{})
		finished := make(chan struct{})
		c := MustCollection(t, rawTool{name: "hung", run: func(ctx context.Context, _ json.RawMessage) (Result, error) {
			defer close(finished)
			<-release
			return Text("late"), nil
		}}).WithCallTimeout(20 * time.Millisecond)
		c.stopWait = 10 * time.Millisecond
		res, err := c.Execute(context.Background(), call("hung", `{}`))
		require.NoError(t, err)
		assert.Contains(t, res.Error, "hung did not finish within 20ms and was stopped")
		close(release)
		<-finished
	})
	t.Run("cancellation stops a hung call at once", func(t *testing.T) {
		release := make(chan struct{})
		finished := make(chan struct{})
		started := make(chan struct{})
		c := MustCollection(t, rawTool{name: "hung", run: func(ctx context.Context, _ json.RawMessage) (Result, error) {
			defer close(finished)
			close(started)
			<-release
			return Text("late"), nil
		}}).WithCallTimeout(0)
		c.stopWait = 10 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-started
			cancel()
		}()
		res, err := c.Execute(ctx, call("hung", `{}`))
		require.ErrorIs(t, err, context.Canceled)
		assert.True(t, res.Failed())
		assert.Contains(t, res.Error, "the run was cancelled")
		close(release)
		<-finished
	})
	t.Run("a panic in the tool's goroutine is still caught", func(t *testing.T) {
		c := MustCollection(t, rawTool{name: "boom", run: func(context.Context, json.RawMessage) (Result, error) { panic("kaboom") }})
		res, err := c.Execute(context.Background(), call("boom", `{}`))
		var pe *PanicError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "kaboom", pe.Value)
		assert.True(t, res.Failed())
	})
}
