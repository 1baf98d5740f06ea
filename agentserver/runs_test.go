package agentserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
)

func newThread(c client) string {
	var th threadDoc
	c.json("POST", "/threads", nil, 200, &th)
	return th.ThreadID
}

func stream(t *testing.T, c client, path string, body any) (*http.Response, []event) {
	t.Helper()
	resp := c.do("POST", path, body)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		data, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, data)
	}
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return resp, readSSE(t, resp.Body)
}

func TestRunStreamModes(t *testing.T) {
	_, ts := newServer(t, agentserver.Options{}, nil)
	c := client{t: t, base: ts.URL}
	tid := newThread(c)
	resp, evs := stream(t, c, "/threads/"+tid+"/runs/stream", map[string]any{
		"assistant_id": agentserver.AssistantID("chat"), "input": human("hi"),
		"stream_mode": []string{"values", "updates", "messages-tuple", "custom", "tasks", "checkpoints", "debug"}})
	require.NotEmpty(t, evs)

	// metadata first, with the run id that Content-Location names.
	assert.Equal(t, "metadata", evs[0].Event)
	var md struct {
		RunID    string `json:"run_id"`
		ThreadID string `json:"thread_id"`
	}
	require.NoError(t, json.Unmarshal(evs[0].Data, &md))
	assert.Equal(t, "/threads/"+tid+"/runs/"+md.RunID, resp.Header.Get("Content-Location"))
	assert.Equal(t, "/threads/"+tid+"/runs/"+md.RunID+"/stream", resp.Header.Get("Location"))
	assert.Equal(t, tid, md.ThreadID)

	values := ofType(evs, "values")
	require.GreaterOrEqual(t, len(values), 2)
	var final chatState
	require.NoError(t, json.Unmarshal(values[len(values)-1].Data, &final))
	require.Len(t, final.Messages, 2)
	answer := final.Messages[1]
	assert.Equal(t, agentserver.Message{Type: "ai", ID: "answer-1", Content: "You said: hi"}, answer)

	// The chunks of the answer share its id.
	msgs := ofType(evs, "messages")
	require.Len(t, msgs, 2)
	text := ""
	for _, m := range msgs {
		var tuple []json.RawMessage
		require.NoError(t, json.Unmarshal(m.Data, &tuple))
		require.Len(t, tuple, 2)
		var chunk struct {
			Type, Content, ID string
		}
		require.NoError(t, json.Unmarshal(tuple[0], &chunk))
		assert.Equal(t, "AIMessageChunk", chunk.Type)
		assert.Equal(t, answer.ID, chunk.ID)
		text += chunk.Content
		var meta struct {
			Node string `json:"langgraph_node"`
		}
		require.NoError(t, json.Unmarshal(tuple[1], &meta))
		assert.Equal(t, "draft", meta.Node)
	}
	assert.Equal(t, answer.Content, text)

	custom := ofType(evs, "custom")
	require.Len(t, custom, 1)
	assert.JSONEq(t, `{"activity":"drafting"}`, string(custom[0].Data))

	updates := ofType(evs, "updates")
	require.Len(t, updates, 2)
	var upd map[string]struct {
		Messages []agentserver.Message `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(updates[0].Data, &upd))
	require.Contains(t, upd, "draft")
	assert.Equal(t, []agentserver.Message{answer}, upd["draft"].Messages)

	tasks := ofType(evs, "tasks")
	require.Len(t, tasks, 4) // start and end of draft and review
	assert.Contains(t, string(tasks[0].Data), `"name":"draft"`)
	assert.Contains(t, string(tasks[1].Data), `"result"`)
	require.NotEmpty(t, ofType(evs, "checkpoints"))
	assert.Contains(t, string(ofType(evs, "checkpoints")[0].Data), `"checkpoint_id"`)
	debug := ofType(evs, "debug")
	require.NotEmpty(t, debug)
	assert.Contains(t, string(debug[0].Data), `"type":"`)

	// Ids grow.
	for i := 1; i < len(evs); i++ {
		assert.Less(t, atoi(evs[i-1].ID), atoi(evs[i].ID))
	}

	// The default mode is values alone; modes are checked.
	_, evs = stream(t, c, "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "chat", "input": human("again")})
	for _, e := range evs[1:] {
		assert.Equal(t, "values", e.Event)
	}
	c.json("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "chat", "stream_mode": "bogus"}, 422, nil)
	c.json("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "nope"}, 404, nil)
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}

func TestInterruptResumeAndFork(t *testing.T) {
	_, ts := newServer(t, agentserver.Options{}, nil)
	c := client{t: t, base: ts.URL}
	tid := newThread(c)
	path := "/threads/" + tid
	_, evs := stream(t, c, path+"/runs/stream", map[string]any{"assistant_id": "chat",
		"input":       map[string]any{"messages": []map[string]any{{"type": "human", "content": "hello", "id": "q1"}}, "review": true},
		"stream_mode": []string{"values", "updates"}})
	values := ofType(evs, "values")
	last := values[len(values)-1]
	var withIntr struct {
		Interrupt []struct {
			ID    string        `json:"id"`
			Value reviewRequest `json:"value"`
		} `json:"__interrupt__"`
		Messages []agentserver.Message `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(last.Data, &withIntr))
	require.Len(t, withIntr.Interrupt, 1, "the last values event carries the interrupt: %s", last.Data)
	assert.Equal(t, "approve the answer?", withIntr.Interrupt[0].Value.Question)
	assert.Len(t, withIntr.Messages, 2, "with the state")
	ups := ofType(evs, "updates")
	assert.Contains(t, string(ups[len(ups)-1].Data), "__interrupt__")

	var runs []struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	c.json("GET", path+"/runs", nil, 200, &runs)
	require.Len(t, runs, 1)
	assert.Equal(t, "interrupted", runs[0].Status)

	// Resume with an empty input and a command: the command wins.
	_, evs = stream(t, c, path+"/runs/stream", map[string]any{"assistant_id": "chat", "input": map[string]any{},
		"command": map[string]any{"resume": "yes, ship it"}})
	values = ofType(evs, "values")
	var done chatState
	require.NoError(t, json.Unmarshal(values[len(values)-1].Data, &done))
	assert.Equal(t, "yes, ship it", done.Approved)
	assert.NotContains(t, string(values[len(values)-1].Data), "__interrupt__")
	var th threadDoc
	c.json("GET", path, nil, 200, &th)
	assert.Equal(t, "idle", th.Status)

	// A resume with nothing waiting is refused in the stream.
	_, evs = stream(t, c, path+"/runs/stream", map[string]any{"assistant_id": "chat", "command": map[string]any{"resume": "again"}})
	require.NotEmpty(t, ofType(evs, "error"))
	assert.Contains(t, string(ofType(evs, "error")[0].Data), "waits on no interrupt")

	// Regenerate: fork from the checkpoint before the first answer, as
	// Agent Chat UI submits checkpoint: parent_checkpoint.
	var hist []stateDoc
	c.json("POST", path+"/history", map[string]any{"limit": 50}, 200, &hist)
	var input stateDoc
	for _, h := range hist {
		if h.Metadata.Source == "input" {
			input = h
		}
	}
	require.NotEmpty(t, input.Checkpoint.CheckpointID)
	var out chatState
	c.json("POST", path+"/runs/wait", map[string]any{"assistant_id": "chat", "input": nil,
		"checkpoint": map[string]string{"checkpoint_id": input.Checkpoint.CheckpointID, "thread_id": tid},
		"command":    nil}, 200, &out)
	// The fork ran draft again from the question alone (Drafts 1 again, not
	// 2) and paused at review again.
	assert.Equal(t, 1, out.Drafts)
	require.Len(t, out.Messages, 2)
	assert.Equal(t, "You said: hello", out.Messages[1].Content)
	var fork stateDoc
	c.json("GET", path+"/state", nil, 200, &fork)
	assert.Equal(t, []string{"review"}, fork.Next)
}

func TestBackgroundRunJoinAndStreamJoin(t *testing.T) {
	hold := make(gate)
	_, ts := newServer(t, agentserver.Options{}, hold)
	c := client{t: t, base: ts.URL}
	tid := newThread(c)
	path := "/threads/" + tid
	var run struct {
		RunID, Status string
		ThreadID      string `json:"thread_id"`
	}
	resp := c.json("POST", path+"/runs", map[string]any{"assistant_id": "chat", "input": human("bg"), "stream_mode": []string{"values", "messages-tuple"}}, 200, &run)
	run.RunID = decodeField(t, resp, run.RunID)
	require.NotEmpty(t, run.RunID)
	assert.Equal(t, path+"/runs/"+run.RunID, resp.Header.Get("Content-Location"))

	var got struct {
		Status string `json:"status"`
	}
	c.json("GET", path+"/runs/"+run.RunID, nil, 200, &got)
	assert.Contains(t, []string{"pending", "running"}, got.Status)
	var th threadDoc
	c.json("GET", path, nil, 200, &th)
	assert.Equal(t, "busy", th.Status)

	// A second run on the busy thread is refused by default.
	c.json("POST", path+"/runs", map[string]any{"assistant_id": "chat", "input": human("x")}, 409, nil)

	close(hold)
	var final chatState
	c.json("GET", path+"/runs/"+run.RunID+"/join", nil, 200, &final)
	assert.Equal(t, "You said: bg", final.Messages[1].Content)
	c.json("GET", path+"/runs/"+run.RunID, nil, 200, &got)
	assert.Equal(t, "success", got.Status)

	// Joining the stream of an ended run replays it; Last-Event-ID resumes
	// after an event.
	all := joinStream(t, c, path+"/runs/"+run.RunID+"/stream", "-1")
	require.Greater(t, len(all), 3)
	assert.Equal(t, "metadata", all[0].Event)
	rest := joinStream(t, c, path+"/runs/"+run.RunID+"/stream", all[2].ID)
	assert.Equal(t, all[3:], rest)
	only := joinStream(t, c, path+"/runs/"+run.RunID+"/stream?stream_mode=messages-tuple", "")
	for _, e := range only[1:] {
		assert.Equal(t, "messages", e.Event)
	}
}

func decodeField(t *testing.T, resp *http.Response, v string) string {
	if v != "" {
		return v
	}
	loc := resp.Header.Get("Content-Location")
	return loc[strings.LastIndex(loc, "/")+1:]
}

func joinStream(t *testing.T, c client, path, lastEventID string) []event {
	t.Helper()
	req, err := http.NewRequest("GET", c.base+path, nil)
	require.NoError(t, err)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	return readSSE(t, resp.Body)
}

func TestMultitaskStrategies(t *testing.T) {
	for _, strategy := range []string{"enqueue", "interrupt", "rollback"} {
		t.Run(strategy, func(t *testing.T) {
			hold := make(gate)
			_, ts := newServer(t, agentserver.Options{}, hold)
			c := client{t: t, base: ts.URL}
			tid := newThread(c)
			path := "/threads/" + tid
			var first, second struct {
				RunID string `json:"run_id"`
			}
			c.json("POST", path+"/runs", map[string]any{"assistant_id": "chat", "input": human("one")}, 200, &first)
			waitStatus(t, c, path+"/runs/"+first.RunID, "running")
			c.json("POST", path+"/runs", map[string]any{"assistant_id": "chat", "input": human("two"), "multitask_strategy": strategy}, 200, &second)
			close(hold)
			var final chatState
			c.json("GET", path+"/runs/"+second.RunID+"/join", nil, 200, &final)
			var texts []string
			for _, m := range final.Messages {
				texts = append(texts, m.Content)
			}
			var firstRun struct {
				Status string `json:"status"`
			}
			switch strategy {
			case "enqueue":
				assert.Equal(t, []string{"one", "You said: one", "two", "You said: two"}, texts)
				c.json("GET", path+"/runs/"+first.RunID, nil, 200, &firstRun)
				assert.Equal(t, "success", firstRun.Status)
			case "interrupt":
				// The first run stopped in draft: its question stays, its
				// answer never came.
				assert.Equal(t, []string{"one", "two", "You said: two"}, texts)
				c.json("GET", path+"/runs/"+first.RunID, nil, 200, &firstRun)
				assert.Equal(t, "interrupted", firstRun.Status)
			case "rollback":
				// The first run is undone: its checkpoints and its record.
				assert.Equal(t, []string{"two", "You said: two"}, texts)
				c.json("GET", path+"/runs/"+first.RunID, nil, 404, nil)
			}
		})
	}
}

// waitStatus polls a run until it has status (the run starts in the
// background).
func waitStatus(t *testing.T, c client, path, status string) {
	t.Helper()
	for range 2000 {
		var r struct {
			Status string `json:"status"`
		}
		c.json("GET", path, nil, 200, &r)
		if r.Status == status {
			return
		}
		if r.Status != "pending" && r.Status != "running" {
			t.Fatalf("run %s is %s, not %s", path, r.Status, status)
		}
		sleepABit()
	}
	t.Fatalf("run %s never became %s", path, status)
}

func TestCancel(t *testing.T) {
	hold := make(gate)
	_, ts := newServer(t, agentserver.Options{}, hold)
	c := client{t: t, base: ts.URL}
	tid := newThread(c)
	path := "/threads/" + tid
	var run struct {
		RunID string `json:"run_id"`
	}
	c.json("POST", path+"/runs", map[string]any{"assistant_id": "chat", "input": human("x")}, 200, &run)
	waitStatus(t, c, path+"/runs/"+run.RunID, "running")
	c.json("POST", path+"/runs/"+run.RunID+"/cancel?wait=1&action=interrupt", nil, 204, nil)
	var got struct {
		Status string `json:"status"`
	}
	c.json("GET", path+"/runs/"+run.RunID, nil, 200, &got)
	assert.Equal(t, "interrupted", got.Status)
	c.json("POST", path+"/runs/"+run.RunID+"/cancel", nil, 409, nil)
	c.json("POST", path+"/runs/"+run.RunID+"/cancel?action=bogus", nil, 422, nil)
}

func TestStatelessRuns(t *testing.T) {
	_, ts := newServer(t, agentserver.Options{}, nil)
	c := client{t: t, base: ts.URL}
	var out chatState
	resp := c.json("POST", "/runs/wait", map[string]any{"assistant_id": "chat", "input": human("solo")}, 200, &out)
	assert.Equal(t, "You said: solo", out.Messages[1].Content)
	assert.Regexp(t, `^/runs/[0-9a-f-]{36}$`, resp.Header.Get("Content-Location"))
	_, evs := stream(t, c, "/runs/stream", map[string]any{"assistant_id": "chat", "input": human("solo")})
	assert.Equal(t, "metadata", evs[0].Event)
	assert.NotEmpty(t, ofType(evs, "values"))
	// Their threads are not listed.
	var found []threadDoc
	c.json("POST", "/threads/search", map[string]any{}, 200, &found)
	assert.Empty(t, found)
}

func TestFailedRunEndsWithError(t *testing.T) {
	_, ts := newServer(t, agentserver.Options{}, nil)
	c := client{t: t, base: ts.URL}
	tid := newThread(c)
	_, evs := stream(t, c, "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "chat", "input": map[string]any{"messages": "not a list"}})
	errs := ofType(evs, "error")
	require.Len(t, errs, 1)
	var e struct{ Error, Message string }
	require.NoError(t, json.Unmarshal(errs[0].Data, &e))
	assert.Contains(t, e.Message, "messages")
	var th threadDoc
	c.json("GET", "/threads/"+tid, nil, 200, &th)
	assert.Equal(t, "error", th.Status)
}
