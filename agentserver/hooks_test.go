package agentserver_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
)

type requestKey struct{}

// TestRouteAndRunHooks: Options.Route wraps each route's handler, named by
// its pattern; a run's Build sees the values of the request that created
// it; RunSetup.Context is what the run runs under and RunSetup.End hears
// how it ended.
func TestRouteAndRunHooks(t *testing.T) {
	var mu sync.Mutex
	var patterns, seen, ended []string
	cp := graph.NewMemorySaver()
	srv, err := agentserver.New(agentserver.Options{Checkpointer: cp, Heartbeat: time.Hour,
		Route: func(pattern string, h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				patterns = append(patterns, pattern)
				mu.Unlock()
				h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, pattern)))
			})
		}})
	require.NoError(t, err)
	require.NoError(t, srv.Serve("chat", agentserver.Compiled(chatGraph(t, cp, nil),
		agentserver.Build(func(ctx context.Context, cfg agentserver.RunConfig) (agentserver.RunSetup[chatState], error) {
			from, _ := ctx.Value(requestKey{}).(string)
			return agentserver.RunSetup[chatState]{
				Context: context.WithValue(ctx, requestKey{}, "run of "+from),
				Observe: func(ev graph.Event[chatState], _ agentserver.Emitter) {
					if ev.Kind == graph.EventEnd {
						mu.Lock()
						seen = append(seen, ev.State.Messages[0].Content)
						mu.Unlock()
					}
				},
				End: func(status string, err error) {
					mu.Lock()
					defer mu.Unlock()
					ended = append(ended, status+" "+from)
				},
			}, nil
		}))))
	c := client{t: t, base: newHTTPServer(t, srv).URL}
	tid := newThread(c)
	var out chatState
	c.json("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "chat", "input": human("hi")}, 200, &out)
	c.json("POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "chat", "input": map[string]any{"messages": "not a list"}}, 200, nil)

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"POST /threads", "POST /threads/{thread_id}/runs/wait", "POST /threads/{thread_id}/runs/wait"}, patterns)
	assert.Equal(t, []string{"hi"}, seen)
	assert.Equal(t, []string{"success POST /threads/{thread_id}/runs/wait", "error POST /threads/{thread_id}/runs/wait"}, ended)
}
