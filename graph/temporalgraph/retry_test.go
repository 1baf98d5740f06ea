package temporalgraph_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/internal/graphtest"
	"github.com/deepgraph/deepgraph/graph/temporalgraph"
)

func TestNodeRetries(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fail is the node's error on its first failures calls.
		fail     func(call int32) error
		failures int32
		opts     []graph.NodeOption
		wantErr  []string // what the run's error says; nil: it succeeds
		wantRuns int32
	}{
		{
			name:     "fails twice, succeeds on the third of three attempts",
			fail:     func(call int32) error { return fmt.Errorf("transient %d", call) },
			failures: 2,
			opts:     []graph.NodeOption{graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3})},
			wantRuns: 3,
		},
		{
			name:     "fails twice with two attempts",
			fail:     func(call int32) error { return fmt.Errorf("transient %d", call) },
			failures: 2,
			opts:     []graph.NodeOption{graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2})},
			wantErr:  []string{`node "flaky"`, "after 2 attempts", "transient 2"},
			wantRuns: 2,
		},
		{
			name:     "a permanent error is not retried",
			fail:     func(int32) error { return graph.Permanent(errBoom) },
			failures: 2,
			opts:     []graph.NodeOption{graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3})},
			wantErr:  []string{`node "flaky"`, "boom"},
			wantRuns: 1,
		},
		{
			name:     "a node without a retry policy runs once",
			fail:     func(int32) error { return errBoom },
			failures: 2,
			wantErr:  []string{`node "flaky"`, "boom"},
			wantRuns: 1,
		},
		{
			// The backoff is the policy's (on the test environment's
			// clock, which skips ahead).
			name:     "a policy with a backoff",
			fail:     func(call int32) error { return fmt.Errorf("transient %d", call) },
			failures: 1,
			opts:     []graph.NodeOption{graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2})},
			wantRuns: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var runs atomic.Int32
			g := graphtest.New()
			g.AddNode("flaky", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
				if n := runs.Add(1); n <= tc.failures {
					return graph.Update[graphtest.State]{}, tc.fail(n)
				}
				return graph.Writes(graphtest.Log.Add(fmt.Sprint("ok after ", runs.Load()))), nil
			}, tc.opts...)
			g.AddNode("before", graphtest.LogNode("before"))
			g.AddSequence(graph.Start, "before", "flaky", graph.End)
			tg := newGraph(t, "retry", tgCompile(t, g), temporalgraph.Options[graphtest.State]{})

			env := newEnv(t)
			tg.Register(env)
			var attempts []int32
			env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if info.ActivityID == "s2-t0-flaky" {
					attempts = append(attempts, info.Attempt)
				}
			})
			out, err := execute(t, env, tg, temporalgraph.Input[graphtest.State]{})
			assert.Equal(t, tc.wantRuns, runs.Load(), "the node's body ran so many times")
			var want []int32
			for i := range tc.wantRuns {
				want = append(want, i+1)
			}
			assert.Equal(t, want, attempts, "one activity attempt per run of the node")
			if tc.wantErr == nil {
				require.NoError(t, err)
				assert.Equal(t, []string{"before", fmt.Sprint("ok after ", tc.wantRuns)}, out.Log)
				return
			}
			require.Error(t, err)
			for _, s := range tc.wantErr {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

// lostWorkerGraph fans out to five work tasks, none with a retry policy,
// counting how often each body runs.
func lostWorkerGraph(t *testing.T, runs *[5]atomic.Int32) *graph.Compiled[graphtest.State] {
	g := graphtest.New()
	g.AddNode("split", graphtest.LogNode("split"))
	graph.AddTask(g, "work", func(_ context.Context, i int) (graph.Update[graphtest.State], error) {
		runs[i].Add(1)
		return graph.Writes(graphtest.Items.Add(fmt.Sprint(i)), graphtest.Total.Merge(i)), nil
	})
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "work", func(graphtest.State) []int { return []int{0, 1, 2, 3, 4} })
	g.AddEdge("work", graph.End)
	return tgCompile(t, g)
}

// A worker dies mid fan-out: the first attempt of task 2 ran its node and
// then, as Temporal sees it, stopped heartbeating. The task runs again under
// Options.InfraRetries though its node has no retry policy; what finished
// does not run again.
func TestLostWorker(t *testing.T) {
	var inProcess [5]atomic.Int32
	want, err := lostWorkerGraph(t, &inProcess).Invoke(context.Background(), graphtest.State{})
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1", "2", "3", "4"}, want.Items)

	lose := func(ctx context.Context, node string, index int) error {
		if node == "work" && index == 2 && activity.GetInfo(ctx).Attempt == 1 {
			return temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
		}
		return nil
	}

	t.Run("retried under InfraRetries", func(t *testing.T) {
		t.Parallel()
		var runs [5]atomic.Int32
		g := newGraph(t, "lost", lostWorkerGraph(t, &runs), temporalgraph.Options[graphtest.State]{})
		env := newEnv(t)
		g.Register(wrapRegistry{r: env, after: lose})
		got, err := execute(t, env, g, temporalgraph.Input[graphtest.State]{})
		require.NoError(t, err)
		assert.Equal(t, want, got)
		for i := range runs {
			wantRuns := int32(1)
			if i == 2 {
				wantRuns = 2
			}
			assert.Equal(t, wantRuns, runs[i].Load(), "task %d", i)
		}
	})
	t.Run("InfraRetries -1: the run fails", func(t *testing.T) {
		t.Parallel()
		var runs [5]atomic.Int32
		g := newGraph(t, "lost", lostWorkerGraph(t, &runs), temporalgraph.Options[graphtest.State]{InfraRetries: -1})
		env := newEnv(t)
		g.Register(wrapRegistry{r: env, after: lose})
		_, err := execute(t, env, g, temporalgraph.Input[graphtest.State]{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `node "work"`)
		assert.Contains(t, err.Error(), "timeout")
		assert.Equal(t, int32(1), runs[2].Load())
	})
	t.Run("InfraRetries bounds the attempts", func(t *testing.T) {
		t.Parallel()
		// Task 2's worker is lost on every attempt: 1 + InfraRetries.
		var runs [5]atomic.Int32
		g := newGraph(t, "lost", lostWorkerGraph(t, &runs), temporalgraph.Options[graphtest.State]{InfraRetries: 2})
		env := newEnv(t)
		g.Register(wrapRegistry{r: env, after: func(ctx context.Context, node string, index int) error {
			if node == "work" && index == 2 {
				return temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
			}
			return nil
		}})
		_, err := execute(t, env, g, temporalgraph.Input[graphtest.State]{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `node "work"`)
		assert.Equal(t, int32(3), runs[2].Load())
	})
}

// A node's timeout and the options become the activity's timeouts; the
// node's own timeout fails it on the worker.
func TestTimeouts(t *testing.T) {
	g := graphtest.New()
	g.AddNode("quick", graphtest.LogNode("quick"))
	var slowRuns atomic.Int32
	g.AddNode("slow", func(ctx context.Context, _ graphtest.State) (graph.Update[graphtest.State], error) {
		slowRuns.Add(1)
		<-ctx.Done()
		return graph.Update[graphtest.State]{}, ctx.Err()
	}, graph.WithTimeout(50*time.Millisecond))
	g.AddSequence(graph.Start, "quick", "slow", graph.End)
	tg := newGraph(t, "timeouts", tgCompile(t, g), temporalgraph.Options[graphtest.State]{Heartbeat: 2 * time.Second, TaskTimeout: 5 * time.Minute})
	env := newEnv(t)
	tg.Register(env)
	heartbeat := map[string]time.Duration{}
	startToClose := map[string]time.Duration{}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		heartbeat[info.ActivityID] = info.HeartbeatTimeout
		startToClose[info.ActivityID] = info.Deadline.Sub(info.StartedTime)
	})
	_, err := execute(t, env, tg, temporalgraph.Input[graphtest.State]{})
	require.Error(t, err)
	// The node's own timeout ended it on the worker, not the activity's
	// start-to-close timeout (5 min and 5 s later) nor its heartbeat.
	assert.Contains(t, err.Error(), `node "slow" failed in step 2: graph: node timed out after 50ms`)
	var timeout *temporal.TimeoutError
	assert.False(t, errors.As(err, &timeout), "not an activity timeout: %v", err)
	assert.Equal(t, int32(1), slowRuns.Load(), "a node without a retry policy that times out runs once")
	assert.Equal(t, map[string]time.Duration{"s1-t0-quick": 6 * time.Second, "s2-t0-slow": 6 * time.Second}, heartbeat, "three heartbeats")
	// The environment takes the start and the deadline from two clocks.
	assert.InDelta(t, 5*time.Minute, startToClose["s1-t0-quick"], float64(time.Second), "Options.TaskTimeout")
	assert.InDelta(t, 50*time.Millisecond+5*time.Second, startToClose["s2-t0-slow"], float64(time.Second), "the node's, with room for the worker to enforce it")
}

// Attempts lost with a worker do not use up the node's retry policy: a node
// allowed two attempts whose first was lost with its worker and whose
// second failed gets its second attempt of its own.
func TestLostAttemptsDoNotCountAgainstTheNode(t *testing.T) {
	var runs atomic.Int32
	g := graphtest.New()
	g.AddNode("flaky", func(context.Context, graphtest.State) (graph.Update[graphtest.State], error) {
		if runs.Add(1) == 2 {
			return graph.Update[graphtest.State]{}, errors.New("flaky once")
		}
		return graph.Writes(graphtest.Log.Add("done")), nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 2}))
	g.AddEdge(graph.Start, "flaky")
	g.AddEdge("flaky", graph.End)
	tg := newGraph(t, "lostcount", tgCompile(t, g), temporalgraph.Options[graphtest.State]{})
	env := newEnv(t)
	tg.Register(wrapRegistry{r: env, after: func(ctx context.Context, node string, _ int) error {
		if activity.GetInfo(ctx).Attempt == 1 {
			return temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
		}
		return nil
	}})
	got, err := execute(t, env, tg, temporalgraph.Input[graphtest.State]{})
	require.NoError(t, err)
	assert.Equal(t, []string{"done"}, got.Log)
	assert.Equal(t, int32(3), runs.Load(), "lost, failed, succeeded")
}
