package agentserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/npmtest"
)

// The packages a React page with useStream needs, rendered headless: the
// SDK Agent Chat UI resolves to, React 19 (the SDK's peer, ^18 || ^19) and
// a jsdom that runs on Node 20.19+.
var reactModules = []npmtest.Package{
	{Name: sdkPackage, Version: sdkVersion},
	{Name: "react", Version: "19.3.1"},
	{Name: "react-dom", Version: "19.3.1"},
	{Name: "jsdom", Version: "29.1.1"},
}

// steppedChatGraph is chatGraph whose answer streams its first chunk and
// then waits for release (or its context) before the second: a client can
// be seen showing a partial answer while the run is going.
func steppedChatGraph(t testing.TB, cp graph.Checkpointer, release <-chan struct{}) *graph.Compiled[chatState] {
	g := graph.New[chatState](fMessages, fReview, fApproved, fDrafts)
	g.AddNode("draft", func(ctx context.Context, s chatState) (graph.Update[chatState], error) {
		var last string
		for _, m := range s.Messages {
			if m.Type == agentserver.MessageHuman {
				last = m.Content
			}
		}
		id := fmt.Sprintf("answer-%d", len(s.Messages))
		graph.Emit(ctx, agentserver.MessageChunk{ID: id, Content: "You said: "})
		select {
		case <-release:
		case <-ctx.Done():
			return graph.Update[chatState]{}, ctx.Err()
		}
		graph.Emit(ctx, agentserver.MessageChunk{ID: id, Content: last})
		return graph.Writes(fMessages.Merge([]agentserver.Message{{Type: agentserver.MessageAI, ID: id, Content: "You said: " + last}}),
			fDrafts.Set(s.Drafts+1)), nil
	})
	g.AddNode("review", func(ctx context.Context, s chatState) (graph.Update[chatState], error) {
		if !s.Review {
			return graph.Update[chatState]{}, nil
		}
		ans, err := graph.Interrupt[string](ctx, reviewRequest{Question: "approve the answer?", Draft: s.Messages[len(s.Messages)-1].Content})
		if err != nil {
			return graph.Update[chatState]{}, err
		}
		return graph.Writes(fApproved.Set(ans)), nil
	})
	g.AddEdge(graph.Start, "draft")
	g.AddEdge("draft", "review")
	g.AddEdge("review", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(cp))
	require.NoError(t, err)
	return run
}

// withRelease serves POST /__test/release beside the server: it lets the
// answer node waiting on release go on (the script calls it once it has
// seen the first chunk rendered).
func withRelease(next http.Handler, release chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/__test/release" {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case release <- struct{}{}:
			w.WriteHeader(http.StatusNoContent)
		case <-r.Context().Done():
		}
	})
}

// TestUseStream renders a React component using the SDK's useStream hook
// in jsdom, headless, against the server: a question's answer streams
// into messages (a render shows the first chunk while the run goes on,
// which only messages-tuple events can do), the whole answer replaces its
// chunks, and a review interrupt is read from the hook's interrupt and
// answered with submit(undefined, {command: {resume}}).
func TestUseStream(t *testing.T) {
	node := npmtest.Node(t)
	modules := npmtest.Modules(t, reactModules...)
	cp := graph.NewMemorySaver()
	srv, err := agentserver.New(agentserver.Options{Checkpointer: cp, Token: "react-token", Heartbeat: time.Second})
	require.NoError(t, err)
	release := make(chan struct{})
	require.NoError(t, srv.Serve("chat", agentserver.Compiled(steppedChatGraph(t, cp, release))))
	ts := httptest.NewServer(withRelease(srv.Handler(), release))
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
	})
	script, err := filepath.Abs("testdata/usestream.mjs")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(cmd.Environ(), "MODULES="+modules, "URL="+ts.URL, "TOKEN=react-token", "ASSISTANT=chat",
		"LANGGRAPH_API_KEY=", "LANGSMITH_API_KEY=", "LANGCHAIN_API_KEY=")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	require.NoError(t, err, "the useStream script failed")
	require.Contains(t, string(out), "OK all checks passed")
}
