package agentserver_test

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/npmtest"
)

// The SDK version Agent Chat UI resolves to (^1.8.10 → the latest 1.x).
const (
	sdkPackage = "@langchain/langgraph-sdk"
	sdkVersion = "1.15.0"
)

// slowState is the state of a graph whose one node runs until cancelled.
type slowState struct {
	Ticks int `json:"ticks"`
}

func slowGraph(t testing.TB, cp graph.Checkpointer) *graph.Compiled[slowState] {
	g := graph.New[slowState](graph.Value(func(s *slowState) *int { return &s.Ticks }))
	g.AddNode("wait", func(ctx context.Context, s slowState) (graph.Update[slowState], error) {
		<-ctx.Done()
		return graph.Update[slowState]{}, ctx.Err()
	})
	g.AddEdge(graph.Start, "wait")
	g.AddEdge("wait", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(cp))
	require.NoError(t, err)
	return run
}

// dropAfter cuts the connection of a POST run stream that asks for it
// (x-drop-after: n) after n events, as a network would: the client must
// reconnect through Location with Last-Event-ID.
func dropAfter(next http.Handler, rejoined *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/stream") && r.Header.Get("Last-Event-ID") != "" {
			rejoined.Add(1)
		}
		n, err := strconv.Atoi(r.Header.Get("X-Drop-After"))
		if err != nil || r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&cutter{ResponseWriter: w, left: n}, r)
	})
}

type cutter struct {
	http.ResponseWriter
	left int
	cut  bool
}

func (c *cutter) Write(p []byte) (int, error) {
	if c.cut {
		return 0, http.ErrHandlerTimeout
	}
	if bytes.HasPrefix(p, []byte("event: ")) {
		if c.left == 0 {
			c.cut = true
			if conn, _, err := http.NewResponseController(c.ResponseWriter).Hijack(); err == nil {
				conn.Close()
			}
			return 0, http.ErrHandlerTimeout
		}
		c.left--
	}
	return c.ResponseWriter.Write(p)
}

func (c *cutter) Flush() {
	if !c.cut {
		http.NewResponseController(c.ResponseWriter).Flush()
	}
}

func (c *cutter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// TestLangGraphSDK drives the server with the real JS client: Agent Chat
// UI's call sequence (info → threads/search → threads → runs/stream with
// values and messages-tuple → history; an interrupt answered with
// command.resume; regenerate from a past checkpoint), then wait, a
// background run joined, a stream replayed, cancel, reject, a stream
// reconnected after a dropped connection, x-api-key auth, and subgraphs'
// events as "mode|namespace" with streamSubgraphs.
func TestLangGraphSDK(t *testing.T) {
	node := npmtest.Node(t)
	dir := npmtest.PackageDir(t, sdkPackage, sdkVersion)
	cp := graph.NewMemorySaver()
	srv, err := agentserver.New(agentserver.Options{Checkpointer: cp, Token: "sdk-token", Heartbeat: time.Second})
	require.NoError(t, err)
	require.NoError(t, srv.Serve("chat", agentserver.Compiled(chatGraph(t, cp, nil))))
	require.NoError(t, srv.Serve("slow", agentserver.Compiled(slowGraph(t, cp))))
	require.NoError(t, srv.Serve("nest", agentserver.Compiled(nestGraph(t, cp))))
	var rejoined atomic.Int32
	ts := serveHTTP(t, srv, dropAfter(srv.Handler(), &rejoined))
	runScript(t, node, "sdk_client.mjs", 2*time.Minute, "SDK=file://"+filepath.Join(dir, "dist", "index.js"), "URL="+ts.URL, "TOKEN=sdk-token")
	require.Positive(t, rejoined.Load(), "the dropped stream was rejoined through Location with Last-Event-ID")
}
