package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
)

// The tests' client of the Agent Server API: calls, runs, their streams.

// lgCall is call on the Agent Server API.
func lgCall[T any](ts *testServer, method, path string, body any, want int) T {
	ts.t.Helper()
	return call[T](ts, method, path, body, want)
}

// lgThread is a thread as the API shows it: its id.
type lgThread struct {
	ThreadID string `json:"thread_id"`
}

// newThread creates a thread.
func (ts *testServer) newThread() lgThread {
	ts.t.Helper()
	return lgCall[lgThread](ts, "POST", "/threads", map[string]any{}, 200)
}

// lgRun is a run as the API shows it.
type lgRun struct {
	RunID     string    `json:"run_id"`
	ThreadID  string    `json:"thread_id"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Kwargs    struct {
		Input *struct {
			Messages []agentserver.Message `json:"messages"`
		} `json:"input"`
		Command *struct {
			Resume json.RawMessage `json:"resume"`
		} `json:"command"`
		Config struct {
			Configurable map[string]json.RawMessage `json:"configurable"`
		} `json:"config"`
	} `json:"kwargs"`
}

// question is the last human message of the run's input.
func (r lgRun) question() string {
	q := ""
	if r.Kwargs.Input != nil {
		for _, m := range r.Kwargs.Input.Messages {
			if m.Type == agentserver.MessageHuman {
				q = m.Content
			}
		}
	}
	return q
}

// lgJoin reads a run's whole stream (of the modes given, all when none).
func (ts *testServer) lgJoin(r lgRun, modes ...string) []lgEvent {
	ts.t.Helper()
	q := url.Values{"stream_mode": modes}
	req, err := http.NewRequest("GET", ts.http.URL+"/threads/"+r.ThreadID+"/runs/"+r.RunID+"/stream?"+q.Encode(), nil)
	require.NoError(ts.t, err)
	if ts.token != "" {
		req.Header.Set("X-Api-Key", ts.token)
	}
	resp, err := ts.http.Client().Do(req)
	require.NoError(ts.t, err)
	defer resp.Body.Close()
	require.Equal(ts.t, 200, resp.StatusCode)
	return readLGEvents(ts.t, resp.Body, len(modes) > 0)
}

// lgRunValues are the values a run ended with: of its newest checkpoint.
func (ts *testServer) lgRunValues(r lgRun) lgResearchValues {
	ts.t.Helper()
	hist := lgCall[[]struct {
		Values lgResearchValues `json:"values"`
	}](ts, "POST", "/threads/"+r.ThreadID+"/history", map[string]any{"limit": 1000, "metadata": map[string]string{"run_id": r.RunID}}, 200)
	require.NotEmpty(ts.t, hist, "run %s has no checkpoint", r.RunID)
	return hist[0].Values
}

// lgCosts are the runs' last custom cost events, summed: tokens, calls
// and US dollars (nil when a run's is unknown).
func (ts *testServer) lgCosts(runs ...lgRun) (tokens, calls int, usd *float64) {
	ts.t.Helper()
	total, known := 0.0, true
	for _, r := range runs {
		var last *customEvent
		for _, ev := range ts.lgJoin(r, "custom") {
			var c customEvent
			require.NoError(ts.t, json.Unmarshal(ev.Data, &c))
			if c.Type == "cost" {
				last = &c
			}
		}
		if last == nil {
			continue
		}
		tokens, calls = tokens+last.Tokens, calls+last.Calls
		if last.CostUSD != nil {
			total += *last.CostUSD
		} else if last.Calls > 0 {
			known = false
		}
	}
	if known {
		usd = &total
	}
	return tokens, calls, usd
}
