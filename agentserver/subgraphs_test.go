package agentserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
)

// nestState is the state of a graph with subgraphs: research (a subgraph
// over the same state: search → read) and summarise (over sumState).
type nestState struct {
	Messages []agentserver.Message `json:"messages"`
	Notes    []string              `json:"notes"`
	Summary  string                `json:"summary"`
}

type sumState struct {
	Text string `json:"text"`
}

var (
	nMessages = graph.Reduce(func(s *nestState) *[]agentserver.Message { return &s.Messages }, agentserver.AddMessages)
	nNotes    = graph.Append(func(s *nestState) *[]string { return &s.Notes })
	nSummary  = graph.Value(func(s *nestState) *string { return &s.Summary })
	sText     = graph.Value(func(s *sumState) *string { return &s.Text })
)

func nestGraph(t *testing.T, cp graph.Checkpointer) *graph.Compiled[nestState] {
	research := graph.New[nestState](nMessages, nNotes, nSummary)
	research.AddNode("search", func(ctx context.Context, _ nestState) (graph.Update[nestState], error) {
		graph.Emit(ctx, agentserver.MessageChunk{ID: "m1", Content: "searching"})
		graph.Emit(ctx, map[string]string{"activity": "search"})
		return graph.Writes(nNotes.Add("searched")), nil
	})
	research.AddNode("read", func(context.Context, nestState) (graph.Update[nestState], error) {
		return graph.Writes(nNotes.Add("read")), nil
	})
	research.AddSequence(graph.Start, "search", "read", graph.End)
	researchRun, err := research.Compile(graph.WithCheckpointer(cp))
	require.NoError(t, err)

	summarise := graph.New[sumState](sText)
	summarise.AddNode("write", func(context.Context, sumState) (graph.Update[sumState], error) {
		return graph.Writes(sText.Set("all read")), nil
	})
	summarise.AddSequence(graph.Start, "write", graph.End)
	summariseRun, err := summarise.Compile(graph.WithCheckpointer(cp))
	require.NoError(t, err)

	g := graph.New[nestState](nMessages, nNotes, nSummary)
	g.AddSubgraph("research", researchRun)
	graph.AddMappedSubgraph(g, "summarise", summariseRun,
		func(nestState) sumState { return sumState{} },
		func(s sumState) graph.Update[nestState] { return graph.Writes(nSummary.Set(s.Text)) })
	g.AddSequence(graph.Start, "research", "summarise", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(cp))
	require.NoError(t, err)
	return run
}

func TestStreamSubgraphs(t *testing.T) {
	cp := graph.NewMemorySaver()
	srv, err := agentserver.New(agentserver.Options{Checkpointer: cp})
	require.NoError(t, err)
	require.NoError(t, srv.Serve("nest", agentserver.Compiled(nestGraph(t, cp))))
	c := client{t: t, base: newHTTPServer(t, srv).URL}
	modes := []string{"values", "updates", "messages-tuple", "custom", "tasks"}

	// Without stream_subgraphs: the run's own events, and its subgraphs'
	// messages and custom events, with no namespace.
	_, plain := stream(t, c, "/threads/"+newThread(c)+"/runs/stream", map[string]any{
		"assistant_id": "nest", "input": human("go"), "stream_mode": modes})
	for _, e := range plain {
		assert.NotContains(t, e.Event, "|")
	}
	require.Len(t, ofType(plain, "messages"), 1)
	require.Len(t, ofType(plain, "custom"), 1)

	tid := newThread(c)
	_, evs := stream(t, c, "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "nest", "input": human("go"), "stream_mode": modes, "stream_subgraphs": true})

	// The run's own events are those of a run without stream_subgraphs,
	// but for the subgraph's messages and custom events.
	var own, plainOwn []string
	for _, e := range evs {
		if !strings.Contains(e.Event, "|") {
			own = append(own, e.Event)
		}
	}
	for _, e := range plain {
		if e.Event != "messages" && e.Event != "custom" {
			plainOwn = append(plainOwn, e.Event)
		}
	}
	assert.Equal(t, plainOwn, own)

	// The namespaces are research:<task id> and summarise:<task id>, the
	// tasks of the thread's history.
	// Each such task names its subgraph's checkpoint namespace in its
	// checkpoint, as LangGraph's ThreadState does.
	var hist []struct {
		Tasks []struct {
			ID         string `json:"id"`
			Name       string `json:"name"`
			Checkpoint *struct {
				ThreadID     string `json:"thread_id"`
				CheckpointNS string `json:"checkpoint_ns"`
			} `json:"checkpoint"`
		} `json:"tasks"`
	}
	c.json("POST", "/threads/"+tid+"/history", map[string]any{"limit": 50}, 200, &hist)
	taskIDs := map[string]string{}
	for _, s := range hist {
		for _, task := range s.Tasks {
			taskIDs[task.Name] = task.ID
			if task.Name == "research" || task.Name == "summarise" {
				require.NotNil(t, task.Checkpoint, "task %s", task.Name)
				assert.Equal(t, task.Name+":"+task.ID, task.Checkpoint.CheckpointNS)
				assert.Equal(t, tid, task.Checkpoint.ThreadID)
			}
		}
	}
	researchNS, summariseNS := "research:"+taskIDs["research"], "summarise:"+taskIDs["summarise"]
	require.NotEqual(t, "research:", researchNS)

	byName := map[string][]json.RawMessage{}
	for _, e := range evs {
		byName[e.Event] = append(byName[e.Event], e.Data)
	}
	for _, name := range []string{"values", "updates", "messages", "custom", "tasks"} {
		require.NotEmpty(t, byName[name+"|"+researchNS], name+"|"+researchNS)
	}
	for _, name := range []string{"values", "updates", "tasks"} {
		require.NotEmpty(t, byName[name+"|"+summariseNS], name+"|"+summariseNS)
	}

	// A subgraph's updates are its nodes', its values its own state.
	updates := byName["updates|"+researchNS]
	require.Len(t, updates, 2)
	assert.JSONEq(t, `{"search":{"notes":["searched"]}}`, string(updates[0]))
	assert.JSONEq(t, `{"read":{"notes":["read"]}}`, string(updates[1]))
	values := byName["values|"+researchNS]
	var last nestState
	require.NoError(t, json.Unmarshal(values[len(values)-1], &last))
	assert.Equal(t, []string{"searched", "read"}, last.Notes)
	assert.JSONEq(t, `{"write":{"text":"all read"}}`, string(byName["updates|"+summariseNS][0]))
	sumValues := byName["values|"+summariseNS]
	assert.JSONEq(t, `{"text":"all read"}`, string(sumValues[len(sumValues)-1]))

	// A message from inside names its node and namespace.
	var tuple []json.RawMessage
	require.NoError(t, json.Unmarshal(byName["messages|"+researchNS][0], &tuple))
	require.Len(t, tuple, 2)
	var meta struct {
		Node string `json:"langgraph_node"`
		NS   string `json:"checkpoint_ns"`
	}
	require.NoError(t, json.Unmarshal(tuple[1], &meta))
	assert.Equal(t, "search", meta.Node)
	assert.Equal(t, researchNS, meta.NS)
	assert.JSONEq(t, `{"activity":"search"}`, string(byName["custom|"+researchNS][0]))

	// The root's updates name the subgraph nodes; its final values are the
	// whole state.
	rootValues := byName["values"]
	var final nestState
	require.NoError(t, json.Unmarshal(rootValues[len(rootValues)-1], &final))
	assert.Equal(t, nestState{Messages: final.Messages, Notes: []string{"searched", "read"}, Summary: "all read"}, final)

	// Joining the run's stream with a mode filter keeps the namespaced
	// events of that mode.
	var runs []struct {
		RunID string `json:"run_id"`
	}
	c.json("GET", "/threads/"+tid+"/runs", nil, 200, &runs)
	require.NotEmpty(t, runs)
	joined := joinStream(t, c, "/threads/"+tid+"/runs/"+runs[0].RunID+"/stream?stream_mode=updates", "-1")
	names := map[string]bool{}
	for _, e := range joined {
		names[e.Event] = true
	}
	assert.True(t, names["updates|"+researchNS], "%v", names)
	assert.False(t, names["values|"+researchNS], "%v", names)
}

// A subgraph that stops at an interrupt says so in its namespace, before
// the run's own __interrupt__.
func TestStreamSubgraphsInterrupt(t *testing.T) {
	cp := graph.NewMemorySaver()
	inner := graph.New[nestState](nMessages, nNotes, nSummary)
	inner.AddNode("ask", func(ctx context.Context, _ nestState) (graph.Update[nestState], error) {
		ok, err := graph.Interrupt[string](ctx, "go on?")
		if err != nil {
			return graph.Update[nestState]{}, err
		}
		return graph.Writes(nNotes.Add(ok)), nil
	})
	inner.AddSequence(graph.Start, "ask", graph.End)
	sub, err := inner.Compile(graph.WithCheckpointer(cp))
	require.NoError(t, err)
	g := graph.New[nestState](nMessages, nNotes, nSummary)
	g.AddSubgraph("check", sub)
	g.AddSequence(graph.Start, "check", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(cp))
	require.NoError(t, err)
	srv, err := agentserver.New(agentserver.Options{Checkpointer: cp})
	require.NoError(t, err)
	require.NoError(t, srv.Serve("ask", agentserver.Compiled(run)))
	c := client{t: t, base: newHTTPServer(t, srv).URL}

	_, evs := stream(t, c, "/threads/"+newThread(c)+"/runs/stream", map[string]any{
		"assistant_id": "ask", "input": map[string]any{}, "stream_mode": []string{"updates"}, "stream_subgraphs": true})
	type intr struct {
		Interrupt []struct {
			ID    string `json:"id"`
			Value string `json:"value"`
		} `json:"__interrupt__"`
	}
	var inside, top intr
	for _, e := range evs {
		switch {
		case strings.HasPrefix(e.Event, "updates|check:"):
			require.NoError(t, json.Unmarshal(e.Data, &inside))
		case e.Event == "updates":
			require.NoError(t, json.Unmarshal(e.Data, &top))
		}
	}
	require.Len(t, inside.Interrupt, 1, "%v", evs)
	require.Len(t, top.Interrupt, 1)
	assert.Equal(t, top.Interrupt, inside.Interrupt)
	assert.Equal(t, "go on?", inside.Interrupt[0].Value)
}
