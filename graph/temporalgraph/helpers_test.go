package temporalgraph_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/internal/graphtest"
	"github.com/deepgraph/deepgraph/graph/temporalgraph"
)

var errBoom = errors.New("boom")

func tgCompile(t *testing.T, g *graph.Graph[graphtest.State], opts ...graph.Option) *graph.Compiled[graphtest.State] {
	t.Helper()
	c, err := g.Compile(opts...)
	require.NoError(t, err)
	return c
}

// testWriter forwards the SDK's log to the test's output until the test
// ends: activities still winding down afterwards write nowhere.
type testWriter struct {
	mu   sync.Mutex
	w    io.Writer
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(p), nil
	}
	return w.w.Write(p)
}

// testLogger is a logger for the SDK that writes Warn and above to the
// test's output (shown with -v or on failure).
func testLogger(t *testing.T) tlog.Logger {
	w := &testWriter{w: t.Output()}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// newEnv is the SDK's test environment, logging through testLogger.
func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(testLogger(t))
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(15 * time.Second)
	return env
}

// newGraph is temporalgraph.New that must succeed.
func newGraph[S any](t *testing.T, name string, c *graph.Compiled[S], opts temporalgraph.Options[S]) *temporalgraph.Graph[S] {
	t.Helper()
	g, err := temporalgraph.New(name, c, opts)
	require.NoError(t, err)
	return g
}

// execute runs g's workflow, registered on env, from in and returns its
// result or its error.
func execute[S any](t *testing.T, env *testsuite.TestWorkflowEnvironment, g *temporalgraph.Graph[S], in temporalgraph.Input[S]) (S, error) {
	t.Helper()
	env.ExecuteWorkflow(g.WorkflowName(), in)
	require.True(t, env.IsWorkflowCompleted(), "the workflow did not complete")
	var out S
	if err := env.GetWorkflowError(); err != nil {
		return out, err
	}
	require.NoError(t, env.GetWorkflowResult(&out))
	return out, nil
}

// runOnTemporal registers g in a fresh environment and runs it from in.
func runOnTemporal[S any](t *testing.T, g *temporalgraph.Graph[S], in temporalgraph.Input[S]) (S, error) {
	t.Helper()
	env := newEnv(t)
	g.Register(env)
	return execute(t, env, g, in)
}

// afterTask is what wrapRegistry calls when an attempt of a task has run:
// a non-nil error replaces the attempt's outcome, as if the worker had been
// lost after running the node.
type afterTask func(ctx context.Context, node string, index int) error

// wrapRegistry registers the graph's workflow as is and its task activity
// behind a wrapper that calls after once each attempt has run.
type wrapRegistry struct {
	r     temporalgraph.Registry
	after afterTask
}

func (w wrapRegistry) RegisterWorkflowWithOptions(wf any, o workflow.RegisterOptions) {
	w.r.RegisterWorkflowWithOptions(wf, o)
}

// RegisterActivityWithOptions wraps the activity, whose argument type is
// the package's own, through reflection: it reads the task's node and
// index from the argument's exported fields.
func (w wrapRegistry) RegisterActivityWithOptions(a any, o activity.RegisterOptions) {
	fv := reflect.ValueOf(a)
	ft := fv.Type()
	wrapped := reflect.MakeFunc(ft, func(args []reflect.Value) []reflect.Value {
		out := fv.Call(args)
		ctx := args[0].Interface().(context.Context)
		in := args[len(args)-1]
		if err := w.after(ctx, in.FieldByName("Node").String(), int(in.FieldByName("Index").Int())); err != nil {
			errv := reflect.New(ft.Out(1)).Elem()
			errv.Set(reflect.ValueOf(err))
			return []reflect.Value{reflect.Zero(ft.Out(0)), errv}
		}
		return out
	})
	w.r.RegisterActivityWithOptions(wrapped.Interface(), o)
}
