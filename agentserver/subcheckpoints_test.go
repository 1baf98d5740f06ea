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

// checkpointDoc is a checkpoints event, or a debug checkpoint's payload.
type checkpointDoc struct {
	Values json.RawMessage `json:"values"`
	Next   []string        `json:"next"`
	Config struct {
		Configurable struct {
			ThreadID      string            `json:"thread_id"`
			CheckpointNS  string            `json:"checkpoint_ns"`
			CheckpointID  string            `json:"checkpoint_id"`
			CheckpointMap map[string]string `json:"checkpoint_map"`
		} `json:"configurable"`
	} `json:"config"`
	ParentConfig *struct {
		Configurable struct {
			CheckpointNS string `json:"checkpoint_ns"`
			CheckpointID string `json:"checkpoint_id"`
		} `json:"configurable"`
	} `json:"parent_config"`
	Metadata struct {
		Source  string            `json:"source"`
		Step    int               `json:"step"`
		Parents map[string]string `json:"parents"`
	} `json:"metadata"`
	Tasks []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"tasks"`
}

// With stream_subgraphs, a subgraph's checkpoints stream as
// checkpoints|<namespace> (and debug|<namespace> checkpoints), each with
// that checkpoint's values, next, config (its namespace, its ID and the
// checkpoint_map of the runs above it), parent_config, metadata and
// tasks, as LangGraph's; each is a checkpoint the store holds. Without
// stream_subgraphs only the run's own stream.
func TestStreamSubgraphCheckpoints(t *testing.T) {
	cp := graph.NewMemorySaver()
	srv, err := agentserver.New(agentserver.Options{Checkpointer: cp})
	require.NoError(t, err)
	require.NoError(t, srv.Serve("nest", agentserver.Compiled(nestGraph(t, cp))))
	c := client{t: t, base: newHTTPServer(t, srv).URL}
	modes := []string{"checkpoints", "debug"}

	_, plain := stream(t, c, "/threads/"+newThread(c)+"/runs/stream", map[string]any{
		"assistant_id": "nest", "input": human("go"), "stream_mode": modes})
	require.NotEmpty(t, ofType(plain, "checkpoints"))
	for _, e := range plain {
		assert.NotContains(t, e.Event, "|")
	}

	tid := newThread(c)
	_, evs := stream(t, c, "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": "nest", "input": human("go"), "stream_mode": modes, "stream_subgraphs": true})

	rootIDs := map[string][]string{} // root checkpoint id → its next
	byNS := map[string][]checkpointDoc{}
	var debugNS []string
	for _, e := range evs {
		mode, ns, _ := strings.Cut(e.Event, "|")
		switch mode {
		case "checkpoints":
			var doc checkpointDoc
			require.NoError(t, json.Unmarshal(e.Data, &doc))
			if ns == "" {
				rootIDs[doc.Config.Configurable.CheckpointID] = doc.Next
				continue
			}
			byNS[ns] = append(byNS[ns], doc)
		case "debug":
			var d struct {
				Type    string        `json:"type"`
				Step    int           `json:"step"`
				Payload checkpointDoc `json:"payload"`
			}
			require.NoError(t, json.Unmarshal(e.Data, &d))
			if d.Type != "checkpoint" {
				assert.Positive(t, d.Step, "a task's step: %s", e.Data) // was 0
			}
			if ns != "" && d.Type == "checkpoint" {
				assert.Equal(t, ns, d.Payload.Config.Configurable.CheckpointNS)
				debugNS = append(debugNS, ns)
			}
		}
	}
	require.Len(t, byNS, 2, "research's and summarise's: %v", evs)
	var researchNS, summariseNS string
	for ns := range byNS {
		switch {
		case strings.HasPrefix(ns, "research:"):
			researchNS = ns
		case strings.HasPrefix(ns, "summarise:"):
			summariseNS = ns
		}
	}
	require.NotEmpty(t, researchNS)
	require.NotEmpty(t, summariseNS)
	assert.Len(t, debugNS, len(byNS[researchNS])+len(byNS[summariseNS]), "a debug checkpoint for each")

	for ns, docs := range byNS {
		node, taskID, _ := strings.Cut(ns, ":")
		for i, d := range docs {
			conf := d.Config.Configurable
			assert.Equal(t, tid, conf.ThreadID)
			assert.Equal(t, ns, conf.CheckpointNS)
			// The checkpoint the store holds, in the subgraph's namespace.
			stored, err := cp.Get(context.Background(), graph.Ref{Thread: tid, Namespace: ns, Checkpoint: conf.CheckpointID})
			require.NoError(t, err, "%s #%d", ns, i)
			assert.Equal(t, stored.Step-1, d.Metadata.Step)
			assert.Equal(t, string(stored.Source), d.Metadata.Source)
			assert.Len(t, d.Next, len(stored.Next))
			require.Len(t, d.Tasks, len(stored.Next))
			for k, pt := range stored.Next {
				assert.Equal(t, pt.Node, d.Next[k])
				assert.Equal(t, pt.ID, d.Tasks[k].ID)
			}
			// Above it: the root checkpoint whose next step runs the
			// subgraph's task, in parents and in checkpoint_map.
			root := d.Metadata.Parents[""]
			assert.Equal(t, []string{node}, rootIDs[root], "%s: parents %v", ns, d.Metadata.Parents)
			assert.Equal(t, map[string]string{"": root, ns: conf.CheckpointID}, conf.CheckpointMap)
			rootCP, err := cp.Get(context.Background(), graph.Ref{Thread: tid, Checkpoint: root})
			require.NoError(t, err)
			assert.Equal(t, taskID, rootCP.Next[0].ID)
			if i == 0 {
				assert.Nil(t, d.ParentConfig, "the namespace's first")
				assert.Equal(t, "input", d.Metadata.Source)
			} else {
				require.NotNil(t, d.ParentConfig)
				assert.Equal(t, docs[i-1].Config.Configurable.CheckpointID, d.ParentConfig.Configurable.CheckpointID)
				assert.Equal(t, ns, d.ParentConfig.Configurable.CheckpointNS)
			}
		}
	}
	// Their values are the subgraph's state.
	research := byNS[researchNS]
	require.Len(t, research, 3, "input, search, read")
	assert.Equal(t, []string{"search"}, research[0].Next)
	assert.Equal(t, []string{"read"}, research[1].Next)
	assert.Empty(t, research[2].Next)
	var st nestState
	require.NoError(t, json.Unmarshal(research[2].Values, &st))
	assert.Equal(t, []string{"searched", "read"}, st.Notes)
	sum := byNS[summariseNS]
	assert.JSONEq(t, `{"text":"all read"}`, string(sum[len(sum)-1].Values), "a mapped subgraph's own state")
}

// A node that streams a compiled graph itself passes its events up the
// run's stream with stream_subgraphs, under the node's namespace, as
// LangGraph's; its checkpoints too.
func TestStreamSubgraphsOfAGraphANodeStreams(t *testing.T) {
	cp := graph.NewMemorySaver()
	inner := graph.New[nestState](nMessages, nNotes, nSummary)
	inner.AddNode("look", func(ctx context.Context, _ nestState) (graph.Update[nestState], error) {
		graph.Emit(ctx, map[string]string{"activity": "look"})
		return graph.Writes(nNotes.Add("looked")), nil
	})
	inner.AddSequence(graph.Start, "look", graph.End)
	sub, err := inner.Compile(graph.WithCheckpointer(cp))
	require.NoError(t, err)
	g := graph.New[nestState](nMessages, nNotes, nSummary)
	g.AddNode("agent", func(ctx context.Context, _ nestState) (graph.Update[nestState], error) {
		var notes []string
		for ev, err := range sub.Stream(ctx, nestState{}) {
			if err != nil {
				return graph.Update[nestState]{}, err
			}
			notes = ev.State.Notes
		}
		return graph.Writes(nNotes.Add(notes...)), nil
	})
	g.AddSequence(graph.Start, "agent", graph.End)
	run, err := g.Compile(graph.WithCheckpointer(cp))
	require.NoError(t, err)
	srv, err := agentserver.New(agentserver.Options{Checkpointer: cp})
	require.NoError(t, err)
	require.NoError(t, srv.Serve("agent", agentserver.Compiled(run)))
	c := client{t: t, base: newHTTPServer(t, srv).URL}
	body := map[string]any{"assistant_id": "agent", "input": map[string]any{}, "stream_mode": []string{"updates", "custom", "checkpoints"}}

	_, plain := stream(t, c, "/threads/"+newThread(c)+"/runs/stream", body)
	for _, e := range plain {
		assert.NotContains(t, e.Event, "|")
	}
	body["stream_subgraphs"] = true
	_, evs := stream(t, c, "/threads/"+newThread(c)+"/runs/stream", body)
	names := map[string][]json.RawMessage{}
	ns := ""
	for _, e := range evs {
		if _, n, ok := strings.Cut(e.Event, "|"); ok {
			ns = n
		}
		names[e.Event] = append(names[e.Event], e.Data)
	}
	require.True(t, strings.HasPrefix(ns, "agent:"), "%v", evs)
	require.Len(t, names["updates|"+ns], 1)
	assert.JSONEq(t, `{"look":{"notes":["looked"]}}`, string(names["updates|"+ns][0]))
	require.Len(t, names["custom|"+ns], 1)
	assert.JSONEq(t, `{"activity":"look"}`, string(names["custom|"+ns][0]))
	assert.Len(t, names["checkpoints|"+ns], 2, "its input's and its step's")
	assert.JSONEq(t, `{"agent":{"notes":["looked"]}}`, string(names["updates"][0]))
}

// With durability exit a run stores only its last checkpoint, when it
// ends; its checkpoints stream all the same, one per step, each as the
// engine has it (the thread's newest is not it yet), the last the one
// stored. (Read from the thread, the first was missing, the others
// were the wrong ones.)
func TestStreamCheckpointsDurabilityExit(t *testing.T) {
	cp := graph.NewMemorySaver()
	_, _, c := serveStepsOn(t, cp, agentserver.NewMemoryStore())
	tid := newThread(c)
	_, evs := stream(t, c, "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "steps",
		"input": map[string]any{"done": []string{}}, "stream_mode": []string{"checkpoints"}, "durability": "exit"})
	cps := ofType(evs, "checkpoints")
	require.Len(t, cps, 4, "input, a, b and c, d: %v", evs)
	seen := map[string]bool{}
	var docs []checkpointDoc
	for i, e := range cps {
		var d checkpointDoc
		require.NoError(t, json.Unmarshal(e.Data, &d))
		assert.Equal(t, i-1, d.Metadata.Step)
		assert.False(t, seen[d.Config.Configurable.CheckpointID], "a checkpoint of its own")
		seen[d.Config.Configurable.CheckpointID] = true
		// Each follows what the store has, as it will be stored: with
		// exit, nothing before the run's last.
		assert.Nil(t, d.ParentConfig)
		docs = append(docs, d)
	}
	assert.Equal(t, []string{"b", "c"}, docs[1].Next)
	stored, err := cp.Get(context.Background(), graph.Thread(tid))
	require.NoError(t, err)
	assert.Equal(t, stored.ID, docs[3].Config.Configurable.CheckpointID)
}
