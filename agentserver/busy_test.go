package agentserver_test

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/agentserver"
)

// With MaxRunning 1 and MaxQueued 1, one run executes, a second waits
// pending for its slot, and a third is refused with 429 and Retry-After;
// once they end, the server takes runs again.
func TestMaxRunningAndQueued(t *testing.T) {
	hold := make(gate)
	_, ts := newServer(t, agentserver.Options{MaxRunning: 1, MaxQueued: 1}, hold)
	c := client{t: t, base: ts.URL}
	start := func() (path string) {
		tid := newThread(c)
		var run struct {
			RunID string `json:"run_id"`
		}
		c.json("POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "chat", "input": human("hi")}, 200, &run)
		return "/threads/" + tid + "/runs/" + run.RunID
	}
	status := func(path string) string {
		var r struct {
			Status string `json:"status"`
		}
		c.json("GET", path, nil, 200, &r)
		return r.Status
	}
	a := start()
	require.Eventually(t, func() bool { return status(a) == "running" }, 30*time.Second, 5*time.Millisecond)
	b := start()
	assert.Equal(t, "pending", status(b), "the second run waits for the one slot")

	tid := newThread(c)
	resp := c.do("POST", "/threads/"+tid+"/runs/stream", map[string]any{"assistant_id": "chat", "input": human("one too many")})
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 429, resp.StatusCode, "%s", body)
	// No run has ended yet: the drain rate is unknown (internal/drain).
	assert.Equal(t, "30", resp.Header.Get("Retry-After"))
	assert.Contains(t, string(body), "limit of 1 running and 1 waiting runs")

	close(hold)
	c.json("GET", a+"/join", nil, 200, nil)
	c.json("GET", b+"/join", nil, 200, nil)
	assert.Equal(t, "success", status(a))
	assert.Equal(t, "success", status(b))
	// The places are given back: the server takes runs again.
	d := start()
	c.json("GET", d+"/join", nil, 200, nil)
	assert.Equal(t, "success", status(d))
}
