package agentserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
)

// A graph of your own, served to Agent Chat UI and the LangGraph SDKs: its
// state keeps the conversation under "messages" with AddMessages, and the
// server's assistant for it is named by its graph id ("echo") or by
// AssistantID("echo").
func Example() {
	type State struct {
		Messages []agentserver.Message `json:"messages"`
	}
	msgs := graph.Reduce(func(s *State) *[]agentserver.Message { return &s.Messages }, agentserver.AddMessages)
	g := graph.New[State](msgs)
	g.AddNode("echo", func(ctx context.Context, s State) (graph.Update[State], error) {
		last := s.Messages[len(s.Messages)-1].Content
		return graph.Writes(msgs.Merge([]agentserver.Message{{Type: agentserver.MessageAI, ID: "reply-1", Content: "echo: " + last}})), nil
	})
	g.AddEdge(graph.Start, "echo")
	g.AddEdge("echo", graph.End)
	cp := graph.NewMemorySaver()
	run, err := g.Compile(graph.WithCheckpointer(cp))
	if err != nil {
		panic(err)
	}

	srv, err := agentserver.New(agentserver.Options{Checkpointer: cp})
	if err != nil {
		panic(err)
	}
	if err := srv.Serve("echo", agentserver.Compiled(run)); err != nil {
		panic(err)
	}
	ts := httptest.NewServer(srv.Handler()) // or http.ListenAndServe("127.0.0.1:2024", srv.Handler())
	defer ts.Close()
	defer srv.Shutdown(context.Background())

	// What a client sends: POST /runs/wait, as client.runs.wait(null, "echo", …).
	resp, err := http.Post(ts.URL+"/runs/wait", "application/json",
		strings.NewReader(`{"assistant_id":"echo","input":{"messages":[{"type":"human","content":"hello","id":"m1"}]}}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(string(body))
	fmt.Println(agentserver.AssistantID("echo") != "")
	// Output:
	// {"messages":[{"type":"human","content":"hello","id":"m1"},{"type":"ai","content":"echo: hello","id":"reply-1"}]}
	// true
}
