package agentserver_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
)

func TestAssistantIDIsLangGraphs(t *testing.T) {
	// The ID LangGraph's servers give the assistant of graph "agent".
	assert.Equal(t, "fe096781-5601-53d2-b2f6-0d3403f7e9ca", agentserver.AssistantID("agent"))
	assert.NotEqual(t, agentserver.AssistantID("agent"), agentserver.AssistantID("research"))
}

func TestInfoOkAssistants(t *testing.T) {
	_, ts := newServer(t, agentserver.Options{}, nil)
	c := client{t: t, base: ts.URL}
	var info struct {
		Version string `json:"version"`
	}
	c.json("GET", "/info", nil, 200, &info)
	assert.NotEmpty(t, info.Version)
	var ok map[string]bool
	c.json("GET", "/ok", nil, 200, &ok)
	assert.True(t, ok["ok"])

	var list []struct {
		AssistantID string            `json:"assistant_id"`
		GraphID     string            `json:"graph_id"`
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Metadata    map[string]string `json:"metadata"`
	}
	c.json("POST", "/assistants/search", map[string]any{"metadata": map[string]string{"created_by": "system"}}, 200, &list)
	require.Len(t, list, 1)
	assert.Equal(t, agentserver.AssistantID("chat"), list[0].AssistantID)
	assert.Equal(t, "chat", list[0].GraphID)
	assert.Equal(t, "echoes, with an optional review", list[0].Description)
	c.json("POST", "/assistants/search", map[string]any{"graph_id": "other"}, 200, &list)
	assert.Empty(t, list)

	var one struct {
		AssistantID string `json:"assistant_id"`
	}
	c.json("GET", "/assistants/chat", nil, 200, &one) // by graph id
	assert.Equal(t, agentserver.AssistantID("chat"), one.AssistantID)
	c.json("GET", "/assistants/"+agentserver.AssistantID("chat"), nil, 200, &one)
	c.json("GET", "/assistants/nope", nil, 404, nil)

	var g struct {
		Nodes []struct{ ID string } `json:"nodes"`
		Edges []struct {
			Source, Target string
		} `json:"edges"`
	}
	c.json("GET", "/assistants/chat/graph", nil, 200, &g)
	var nodes []string
	for _, n := range g.Nodes {
		nodes = append(nodes, n.ID)
	}
	assert.Equal(t, []string{"__start__", "draft", "review", "__end__"}, nodes)
	assert.Contains(t, g.Edges, struct{ Source, Target string }{"draft", "review"})
	assert.Contains(t, g.Edges, struct{ Source, Target string }{"__start__", "draft"})

	var sch struct {
		GraphID     string `json:"graph_id"`
		StateSchema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"state_schema"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	c.json("GET", "/assistants/chat/schemas", nil, 200, &sch)
	assert.Equal(t, "object", sch.StateSchema.Type)
	assert.Contains(t, sch.StateSchema.Properties, "messages")
	assert.Contains(t, sch.StateSchema.Properties, "approved")
}

type threadDoc struct {
	ThreadID   string                     `json:"thread_id"`
	Status     string                     `json:"status"`
	Metadata   map[string]json.RawMessage `json:"metadata"`
	Values     json.RawMessage            `json:"values"`
	Interrupts map[string]json.RawMessage `json:"interrupts"`
}

func TestThreads(t *testing.T) {
	_, ts := newServer(t, agentserver.Options{}, nil)
	c := client{t: t, base: ts.URL}
	var th threadDoc
	c.json("POST", "/threads", map[string]any{"metadata": map[string]string{"owner": "ann"}}, 200, &th)
	assert.Regexp(t, `^[0-9a-f-]{36}$`, th.ThreadID)
	assert.Equal(t, "idle", th.Status)
	assert.JSONEq(t, `null`, string(th.Values))

	// A client's own id; if_exists.
	id := "0b0e1c9e-7a4c-4d8e-9f3a-1c2b3d4e5f60"
	c.json("POST", "/threads", map[string]any{"thread_id": id}, 200, &th)
	assert.Equal(t, id, th.ThreadID)
	c.json("POST", "/threads", map[string]any{"thread_id": id}, 409, nil)
	c.json("POST", "/threads", map[string]any{"thread_id": id, "if_exists": "do_nothing"}, 200, &th)
	c.json("POST", "/threads", map[string]any{"thread_id": "not-a-uuid"}, 422, nil)

	c.json("PATCH", "/threads/"+id, map[string]any{"metadata": map[string]string{"owner": "bob"}}, 200, &th)
	assert.JSONEq(t, `"bob"`, string(th.Metadata["owner"]))

	// A run stamps graph_id and assistant_id.
	c.json("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "chat", "input": human("hi")}, 200, nil)
	c.json("GET", "/threads/"+id, nil, 200, &th)
	assert.JSONEq(t, `"chat"`, string(th.Metadata["graph_id"]))
	assert.JSONEq(t, `"`+agentserver.AssistantID("chat")+`"`, string(th.Metadata["assistant_id"]))
	var values struct {
		Messages []agentserver.Message `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(th.Values, &values))
	require.Len(t, values.Messages, 2)
	assert.Equal(t, "You said: hi", values.Messages[1].Content)

	var found []threadDoc
	resp := c.json("POST", "/threads/search", map[string]any{"metadata": map[string]string{"graph_id": "chat"}, "limit": 100}, 200, &found)
	require.Len(t, found, 1)
	assert.Equal(t, id, found[0].ThreadID)
	assert.Equal(t, "1", resp.Header.Get("X-Pagination-Total"))
	c.json("POST", "/threads/search", map[string]any{"status": "busy"}, 200, &found)
	assert.Empty(t, found)
	c.json("POST", "/threads/search", map[string]any{"limit": 1, "sort_by": "created_at", "sort_order": "asc"}, 200, &found)
	require.Len(t, found, 1)
	var n int
	c.json("POST", "/threads/count", map[string]any{}, 200, &n)
	assert.Equal(t, 2, n)

	c.json("DELETE", "/threads/"+id, nil, 204, nil)
	c.json("GET", "/threads/"+id, nil, 404, nil)
	c.json("GET", "/threads/"+id+"/state", nil, 404, nil)
}

type stateDoc struct {
	Values     json.RawMessage `json:"values"`
	Next       []string        `json:"next"`
	Checkpoint struct {
		ThreadID     string `json:"thread_id"`
		CheckpointID string `json:"checkpoint_id"`
	} `json:"checkpoint"`
	ParentCheckpoint *struct {
		CheckpointID string `json:"checkpoint_id"`
	} `json:"parent_checkpoint"`
	Metadata struct {
		Source string `json:"source"`
		Step   int    `json:"step"`
	} `json:"metadata"`
	Tasks []struct {
		ID, Name   string
		Result     json.RawMessage `json:"result"`
		Interrupts []struct {
			ID    string          `json:"id"`
			Value json.RawMessage `json:"value"`
		} `json:"interrupts"`
	} `json:"tasks"`
	CreatedAt string `json:"created_at"`
}

func TestStateHistoryAndUpdate(t *testing.T) {
	_, ts := newServer(t, agentserver.Options{}, nil)
	c := client{t: t, base: ts.URL}
	var th threadDoc
	c.json("POST", "/threads", nil, 200, &th)
	path := "/threads/" + th.ThreadID

	var st stateDoc
	c.json("GET", path+"/state", nil, 200, &st) // no run yet: empty
	assert.JSONEq(t, `{}`, string(st.Values))
	var hist []stateDoc
	c.json("POST", path+"/history", map[string]any{"limit": 10}, 200, &hist)
	assert.Empty(t, hist)

	// A run that pauses for review.
	var out map[string]json.RawMessage
	c.json("POST", path+"/runs/wait", map[string]any{"assistant_id": "chat", "input": map[string]any{"messages": []map[string]any{{"type": "human", "content": "hello"}}, "review": true}}, 200, &out)
	require.Contains(t, out, "__interrupt__")
	var intr []struct {
		ID    string        `json:"id"`
		Value reviewRequest `json:"value"`
	}
	require.NoError(t, json.Unmarshal(out["__interrupt__"], &intr))
	require.Len(t, intr, 1)
	assert.Equal(t, "You said: hello", intr[0].Value.Draft)

	c.json("GET", path, nil, 200, &th)
	assert.Equal(t, "interrupted", th.Status)

	c.json("GET", path+"/state", nil, 200, &st)
	assert.Equal(t, []string{"review"}, st.Next)
	require.Len(t, st.Tasks, 1)
	require.Len(t, st.Tasks[0].Interrupts, 1)
	assert.Equal(t, intr[0].ID, st.Tasks[0].Interrupts[0].ID)
	require.NotNil(t, st.ParentCheckpoint)
	assert.Equal(t, th.ThreadID, st.Checkpoint.ThreadID)

	c.json("POST", path+"/history", map[string]any{"limit": 10}, 200, &hist)
	require.GreaterOrEqual(t, len(hist), 2)
	assert.Equal(t, st.Checkpoint.CheckpointID, hist[0].Checkpoint.CheckpointID)
	assert.Equal(t, "input", hist[len(hist)-1].Metadata.Source)
	assert.Nil(t, hist[len(hist)-1].ParentCheckpoint)
	for _, h := range hist[:len(hist)-1] {
		require.NotNil(t, h.ParentCheckpoint, "every checkpoint but the first has a parent")
	}
	var older []stateDoc
	c.json("POST", path+"/history", map[string]any{"limit": 10, "before": map[string]string{"checkpoint_id": hist[0].Checkpoint.CheckpointID}}, 200, &older)
	assert.Len(t, older, len(hist)-1)

	// A past checkpoint by id.
	var past stateDoc
	c.json("GET", path+"/state/"+hist[len(hist)-1].Checkpoint.CheckpointID, nil, 200, &past)
	assert.Equal(t, "input", past.Metadata.Source)
	c.json("POST", path+"/state/checkpoint", map[string]any{"checkpoint": map[string]string{"checkpoint_id": hist[len(hist)-1].Checkpoint.CheckpointID}}, 200, &past)
	assert.Equal(t, "input", past.Metadata.Source)

	// update_state as the review node: the interrupt is answered by it.
	var upd struct {
		Checkpoint struct {
			CheckpointID string `json:"checkpoint_id"`
		} `json:"checkpoint"`
	}
	c.json("POST", path+"/state", map[string]any{"values": map[string]any{"approved": "by update"}, "as_node": "review"}, 200, &upd)
	assert.NotEmpty(t, upd.Checkpoint.CheckpointID)
	c.json("GET", path+"/state", nil, 200, &st)
	assert.Equal(t, upd.Checkpoint.CheckpointID, st.Checkpoint.CheckpointID)
	var v chatState
	require.NoError(t, json.Unmarshal(st.Values, &v))
	assert.Equal(t, "by update", v.Approved)
	c.json("POST", path+"/state", map[string]any{"values": map[string]any{"nope": 1}}, 422, nil)
}

func TestAuthOriginAndBodies(t *testing.T) {
	_, ts := newServer(t, agentserver.Options{Token: "s3cret", CORSOrigins: []string{"http://ui.example"}}, nil)
	c := client{t: t, base: ts.URL}
	c.json("GET", "/ok", nil, 200, nil) // open
	c.json("GET", "/info", nil, 401, nil)
	c.hdr = http.Header{"X-Api-Key": {"wrong"}}
	c.json("GET", "/info", nil, 401, nil)
	c.hdr = http.Header{"X-Api-Key": {"s3cret"}}
	c.json("GET", "/info", nil, 200, nil)
	c.hdr = http.Header{"Authorization": {"Bearer s3cret"}}
	c.json("GET", "/info", nil, 200, nil)

	// Another site's page is refused; a listed one gets CORS headers that
	// expose the run's location.
	c.hdr = http.Header{"X-Api-Key": {"s3cret"}, "Origin": {"http://evil.example"}}
	c.json("GET", "/info", nil, 403, nil)
	req, _ := http.NewRequest("OPTIONS", ts.URL+"/threads", nil)
	req.Header.Set("Origin", "http://ui.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 204, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), "X-Api-Key")
	assert.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "PATCH")
	assert.Contains(t, resp.Header.Get("Access-Control-Expose-Headers"), "Content-Location")
	assert.Contains(t, resp.Header.Get("Access-Control-Expose-Headers"), "Location")

	// JSON as text/plain is read (Studio); a form is not.
	post := func(ct, body string) int {
		req, _ := http.NewRequest("POST", ts.URL+"/threads", stringsReader(body))
		req.Header.Set("Content-Type", ct)
		req.Header.Set("X-Api-Key", "s3cret")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, 200, post("text/plain;charset=UTF-8", `{"metadata":{"a":1}}`))
	assert.Equal(t, 415, post("application/x-www-form-urlencoded", `a=1`))
	assert.Equal(t, 413, post("application/json", `{"metadata":{"a":"`+strings.Repeat("a", 2<<20)+`"}}`))
}

func TestLoopbackRefusesOtherHosts(t *testing.T) {
	_, ts := newServer(t, agentserver.Options{Loopback: true}, nil)
	req, _ := http.NewRequest("GET", ts.URL+"/info", nil)
	req.Host = "attacker.example:80"
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)
}

func TestThreadsAreBounded(t *testing.T) {
	_, ts := newServer(t, agentserver.Options{MaxThreads: 2}, nil)
	c := client{t: t, base: ts.URL}
	a := newThread(c)
	newThread(c)
	resp := c.json("POST", "/threads", nil, 429, nil)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	c.json("POST", "/runs/wait", map[string]any{"assistant_id": "chat", "input": human("x")}, 429, nil) // a stateless run needs a thread too
	c.json("DELETE", "/threads/"+a, nil, 204, nil)
	newThread(c)
}

func TestQuietStreamsHaveHeartbeats(t *testing.T) {
	cp := graph.NewMemorySaver()
	srv, err := agentserver.New(agentserver.Options{Checkpointer: cp, Heartbeat: time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, srv.Serve("slow", agentserver.Compiled(slowGraph(t, cp))))
	ts := newHTTPServer(t, srv)
	c := client{t: t, base: ts.URL}
	tid := newThread(c)
	resp := c.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "slow", "input": map[string]any{}})
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	// The run never ends by itself: what comes after its first events is
	// heartbeat comments, which the SDKs' decoders skip.
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == ": heartbeat" {
			return
		}
	}
	t.Fatalf("the stream ended without a heartbeat: %v", sc.Err())
}
