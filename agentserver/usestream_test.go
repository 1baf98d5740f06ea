package agentserver_test

import (
	"net/http"
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
	release := make(gate)
	require.NoError(t, srv.Serve("chat", agentserver.Compiled(gatedChatGraph(t, cp, nil, release))))
	ts := serveHTTP(t, srv, withRelease(srv.Handler(), release))
	runScript(t, node, "usestream.mjs", 2*time.Minute, "MODULES="+modules, "URL="+ts.URL, "TOKEN=react-token", "ASSISTANT=chat")
}
