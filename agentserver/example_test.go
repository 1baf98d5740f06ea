package agentserver_test

import (
	"context"
	"encoding/json"
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

// A server keeps its threads and runs in Options.Store: a server started
// again over the same store (and checkpointer) lists the threads of the
// one before, with their metadata. MemoryStore keeps them for one process;
// a durable Store keeps them across restarts.
func ExampleMemoryStore() {
	cp, store := graph.NewMemorySaver(), agentserver.NewMemoryStore()
	first, err := agentserver.New(agentserver.Options{Checkpointer: cp, Store: store})
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(first.Handler())
	resp, err := http.Post(ts.URL+"/threads", "application/json", strings.NewReader(`{"metadata":{"owner":"ann"}}`))
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	ts.Close()
	_ = first.Shutdown(context.Background())

	again, err := agentserver.New(agentserver.Options{Checkpointer: cp, Store: store})
	if err != nil {
		panic(err)
	}
	ts = httptest.NewServer(again.Handler())
	defer ts.Close()
	defer again.Shutdown(context.Background())
	resp, err = http.Post(ts.URL+"/threads/search", "application/json", strings.NewReader(`{"metadata":{"owner":"ann"}}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var found []struct {
		Metadata agentserver.Metadata `json:"metadata"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&found); err != nil {
		panic(err)
	}
	fmt.Println(len(found), string(found[0].Metadata["owner"]))
	// Output:
	// 1 "ann"
}
