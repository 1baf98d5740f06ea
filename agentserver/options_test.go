package agentserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
)

// TestOptions serves the chat graph with every option: values shown in a
// shape of their own, an input read from a configuration, interrupts shown
// and answered in the client's terms, and a run set up per configuration
// with an observer.
func TestOptions(t *testing.T) {
	cp := graph.NewMemorySaver()
	chat := chatGraph(t, cp, nil)
	closed := 0
	srv, err := agentserver.New(agentserver.Options{Checkpointer: cp})
	require.NoError(t, err)
	require.NoError(t, srv.Serve("chat", agentserver.Compiled(chat,
		agentserver.Values(func(s chatState) any {
			return map[string]any{"messages": s.Messages, "n": len(s.Messages), "approved": s.Approved}
		}),
		agentserver.Input(func(cfg agentserver.RunConfig, raw json.RawMessage) (chatState, []graph.Write[chatState], error) {
			var in struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(raw, &in); err != nil || in.Text == "" {
				return chatState{}, nil, errors.New("send {text}")
			}
			review := string(cfg.Configurable["review"]) == "true"
			return chatState{Messages: []agentserver.Message{{Type: "human", Content: in.Text}}}, []graph.Write[chatState]{fReview.Set(review)}, nil
		}),
		agentserver.Interrupts[chatState](func(pi graph.PendingInterrupt) any {
			req, _ := graph.PayloadOf[reviewRequest](pi)
			return map[string]string{"ask": strings.ToUpper(req.Question)}
		}, func(_ graph.PendingInterrupt, raw json.RawMessage) (any, error) {
			var d struct {
				Decision string `json:"decision"`
			}
			if err := json.Unmarshal(raw, &d); err != nil || d.Decision == "" {
				return nil, errors.New("send {decision}")
			}
			return "decided: " + d.Decision, nil
		}),
		agentserver.Build(func(_ context.Context, cfg agentserver.RunConfig) (agentserver.RunSetup[chatState], error) {
			if string(cfg.Configurable["mode"]) == `"bad"` {
				return agentserver.RunSetup[chatState]{}, fmt.Errorf("%w: mode bad is not offered", agentserver.ErrBadConfig)
			}
			steps := 0
			return agentserver.RunSetup[chatState]{
				Observe: func(ev graph.Event[chatState], out agentserver.Emitter) {
					if ev.Kind == graph.EventStep {
						steps++
						out.Custom(map[string]int{"step": steps})
					}
				},
				Close: func() { closed++ },
			}, nil
		}))))
	ts := newHTTPServer(t, srv)
	c := client{t: t, base: ts.URL}
	tid := newThread(c)
	path := "/threads/" + tid + "/runs/stream"

	_, evs := stream(t, c, path, map[string]any{"assistant_id": "chat", "input": map[string]any{"text": "hi"},
		"config": map[string]any{"configurable": map[string]any{"review": true}}, "stream_mode": []string{"values", "custom"}})
	values := ofType(evs, "values")
	var v struct {
		N         int                                    `json:"n"`
		Interrupt []struct{ Value struct{ Ask string } } `json:"__interrupt__"`
	}
	require.NoError(t, json.Unmarshal(values[len(values)-1].Data, &v))
	assert.Equal(t, 2, v.N)
	require.Len(t, v.Interrupt, 1)
	assert.Equal(t, "APPROVE THE ANSWER?", v.Interrupt[0].Value.Ask)
	custom := ofType(evs, "custom")
	require.NotEmpty(t, custom)
	assert.JSONEq(t, `{"step":1}`, string(custom[0].Data))
	for _, e := range custom {
		assert.NotContains(t, string(e.Data), "drafting", "with an observer, emitted values reach custom only through it")
	}

	_, evs = stream(t, c, path, map[string]any{"assistant_id": "chat", "command": map[string]any{"resume": map[string]string{"decision": "yes"}}})
	values = ofType(evs, "values")
	var done struct {
		Approved string `json:"approved"`
	}
	require.NoError(t, json.Unmarshal(values[len(values)-1].Data, &done))
	assert.Equal(t, "decided: yes", done.Approved)

	_, evs = stream(t, c, path, map[string]any{"assistant_id": "chat", "input": map[string]any{"text": "x"},
		"config": map[string]any{"configurable": map[string]any{"mode": "bad"}}})
	errs := ofType(evs, "error")
	require.Len(t, errs, 1)
	assert.Contains(t, string(errs[0].Data), "ValueError")
	assert.Contains(t, string(errs[0].Data), "mode bad is not offered")
	assert.Equal(t, 2, closed, "each run set up is closed")
}

// New leaves the caller's options as they were: the guard normalises the
// CORS origins into its own copy.
func TestNewKeepsTheCallersOrigins(t *testing.T) {
	origins := []string{"https://App.Example/"}
	agentserver.New(agentserver.Options{CORSOrigins: origins})
	assert.Equal(t, []string{"https://App.Example/"}, origins)
}
