package agentserver_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
)

// TestJoinRunOfAnEarlierServer: the stream of a run that ended before the
// server restarted went with that server. Joining it on the new server
// (GET …/runs/{id}/stream, /runs/{id}/stream) ends at once with what is
// left of it — its metadata, the values it ended with (its own last
// checkpoint's, not a later run's), and its error when it failed — and
// /join answers those values (or the error), as LangGraph's join answers
// a run whose stream is gone with the thread's values.
func TestJoinRunOfAnEarlierServer(t *testing.T) {
	cp := graph.NewMemorySaver()
	store := agentserver.NewMemoryStore()
	sg, srv, c := serveStepsOn(t, cp, store)
	tid := newThread(c)
	path := "/threads/" + tid
	in := map[string]any{"assistant_id": "steps", "input": map[string]any{"done": []string{}}}
	var out stepsState
	c.json("POST", path+"/runs/wait", in, 200, &out)
	c.json("POST", path+"/runs/wait", in, 200, &out)
	require.Len(t, out.Done, 8)
	sg.fail.Store(true)
	c.json("POST", path+"/runs/wait", in, 200, nil)
	var runs []runDoc
	c.json("GET", path+"/runs", nil, 200, &runs)
	require.Len(t, runs, 3)
	failed, second, first := runs[0], runs[1], runs[2]
	require.Equal(t, "error", failed.Status)
	// The first server's stream of the second run, for comparison.
	live := joinStream(t, c, path+"/runs/"+second.RunID+"/stream", "-1")
	liveValues := ofType(live, "values")
	require.NotEmpty(t, liveValues)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx))
	_, _, c2 := serveStepsOn(t, cp, store)

	valuesOf := func(evs []event) stepsState {
		t.Helper()
		vs := ofType(evs, "values")
		require.Len(t, vs, 1, "%v", evs)
		var st stepsState
		require.NoError(t, json.Unmarshal(vs[0].Data, &st))
		return st
	}
	for _, tc := range []struct {
		name, path string
		done       int
	}{
		{"first", path + "/runs/" + first.RunID + "/stream", 4},
		{"second", path + "/runs/" + second.RunID + "/stream", 8},
		{"second, by run", "/runs/" + second.RunID + "/stream", 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, lastID := range []string{"", "-1", "57"} { // 57: an id of the lost stream
				evs := joinStream(t, c2, tc.path, lastID)
				require.NotEmpty(t, evs)
				assert.Equal(t, "metadata", evs[0].Event)
				assert.Empty(t, ofType(evs, "error"))
				assert.Len(t, valuesOf(evs).Done, tc.done, "the values the run ended with")
			}
		})
	}
	evs := joinStream(t, c2, path+"/runs/"+second.RunID+"/stream", "")
	assert.JSONEq(t, string(liveValues[len(liveValues)-1].Data), string(ofType(evs, "values")[0].Data), "the last values the live stream sent")

	// The failed run: its values as far as it got, then its error.
	evs = joinStream(t, c2, path+"/runs/"+failed.RunID+"/stream", "")
	require.NotEmpty(t, ofType(evs, "error"))
	assert.Equal(t, "error", evs[len(evs)-1].Event)
	assert.Len(t, valuesOf(evs).Done, 9, "the two runs and a: the state of the step before c failed")

	// /join answers the values, or the error.
	var joined stepsState
	c2.json("GET", path+"/runs/"+first.RunID+"/join", nil, 200, &joined)
	assert.Len(t, joined.Done, 4)
	c2.json("GET", path+"/runs/"+second.RunID+"/join", nil, 200, &joined)
	assert.Len(t, joined.Done, 8)
	var failure map[string]any
	c2.json("GET", path+"/runs/"+failed.RunID+"/join", nil, 200, &failure)
	assert.Contains(t, failure, "__error__")
}
