package runstore

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAlive(t *testing.T) {
	host, pid := CurrentProcess()
	dead := deadPID(t)
	assert.True(t, Alive(host, pid), "this process")
	assert.False(t, Alive(host, dead), "a process that has exited")
	assert.False(t, Alive(host, 0))
	assert.False(t, Alive(host, -1))
	assert.False(t, Alive(host, 1<<40))
	assert.True(t, Alive("elsewhere.example", dead), "another machine is trusted")
	assert.True(t, Alive("", dead), "an unknown machine is trusted")
}

func TestEffective(t *testing.T) {
	now := time.Now()
	host, pid := CurrentProcess()
	dead := deadPID(t)
	run := func(status Status, host string, pid int, updated time.Time) *Run {
		return &Run{Status: status, Host: host, PID: pid, Started: now.Add(-72 * time.Hour), Updated: updated}
	}
	for name, c := range map[string]struct {
		run  *Run
		want Status
	}{
		"running here":              {run(StatusRunning, host, pid, now.Add(-48*time.Hour)), StatusRunning},
		"crashed here":              {run(StatusRunning, host, dead, now), StatusInterrupted},
		"running elsewhere":         {run(StatusRunning, "elsewhere.example", dead, now.Add(-time.Hour)), StatusRunning},
		"silent elsewhere":          {run(StatusRunning, "elsewhere.example", dead, now.Add(-StaleAfter-time.Second)), StatusInterrupted},
		"silent, never updated":     {run(StatusRunning, "elsewhere.example", 1, time.Time{}), StatusInterrupted},
		"done":                      {run(StatusDone, host, dead, now), StatusDone},
		"failed":                    {run(StatusFailed, host, dead, now), StatusFailed},
		"needs input, process gone": {run(StatusNeedsInput, host, dead, now), StatusNeedsInput},
		"interrupted":               {run(StatusInterrupted, host, pid, now), StatusInterrupted},
		"queued, no process":        {run(StatusQueued, "", 0, time.Time{}), StatusQueued},
		"queued, process gone":      {run(StatusQueued, host, dead, now), StatusQueued},
	} {
		assert.Equal(t, c.want, c.run.Effective(now, Alive), name)
	}

	// alive decides for the process.
	r := run(StatusRunning, "h", 7, now)
	var asked []string
	assert.Equal(t, StatusInterrupted, r.Effective(now, func(host string, pid int) bool {
		asked = append(asked, host)
		return pid != 7
	}))
	assert.Equal(t, []string{"h"}, asked)
}

func TestDuration(t *testing.T) {
	start := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	now := start.Add(time.Hour)
	alive := func(string, int) bool { return true }
	dead := func(string, int) bool { return false }
	running := func() *Run {
		return &Run{Status: StatusRunning, Host: "h", Started: start, Updated: start.Add(time.Minute)}
	}
	done := &Run{Status: StatusDone, Started: start, Ended: start.Add(90 * time.Second), Updated: start.Add(90 * time.Second)}
	assert.Equal(t, 90*time.Second, done.Duration(now, alive))
	assert.Equal(t, time.Hour, running().Duration(now, alive), "running: until now")
	assert.Equal(t, time.Minute, running().Duration(now, dead), "killed: until its last update, not growing with time")
	paused := &Run{Status: StatusNeedsInput, Started: start, Updated: start.Add(2 * time.Minute)}
	assert.Equal(t, 2*time.Minute, paused.Duration(now, alive), "waiting for a person is not run time")
	queued := &Run{Status: StatusQueued, Started: start}
	assert.Equal(t, time.Duration(0), queued.Duration(now, alive), "waiting in a queue is not run time")
	assert.Equal(t, time.Duration(0), running().Duration(start.Add(-time.Second), alive), "never negative")
}

func TestNewID(t *testing.T) {
	seen := make(map[string]bool)
	used := make(map[rune]bool)
	for range 10000 {
		id := NewID()
		if !assert.Len(t, id, 8) || !assert.False(t, seen[id], "drawn twice: %s", id) {
			return
		}
		seen[id] = true
		for _, c := range id {
			used[c] = true
		}
	}
	var alphabet []rune
	for c := range used {
		alphabet = append(alphabet, c)
	}
	slices.Sort(alphabet)
	assert.Equal(t, "0123456789abcdefghjkmnpqrstvwxyz", string(alphabet), "every character of the alphabet and no other")
}

func TestRunJSON(t *testing.T) {
	start := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	r := &Run{ID: "abcd1234", Thread: "t", Kind: KindAgent, Question: "q", Status: StatusRunning, Started: start, Tokens: 10, Calls: 1}
	data, err := json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"abcd1234","thread":"t","kind":"agent","question":"q","status":"running",
		"started":"2025-01-01T12:00:00Z","tokens":10,"calls":1,"cost_usd":null}`, string(data),
		"unset fields and documents are left out; an unknown cost is null, never 0")

	r.Updated, r.Ended, r.Error, r.Host, r.PID = start.Add(time.Second), start.Add(time.Minute), "e", "h", 7
	r.Settings, r.Report = json.RawMessage(`{"s":1}`), json.RawMessage(`{"answer":"a"}`)
	r.Cost = new(0.0042)
	data, err = json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"abcd1234","thread":"t","kind":"agent","question":"q","status":"running",
		"started":"2025-01-01T12:00:00Z","updated":"2025-01-01T12:00:01Z","ended":"2025-01-01T12:01:00Z",
		"error":"e","tokens":10,"calls":1,"cost_usd":0.0042,"host":"h","pid":7,"settings":{"s":1},"report":{"answer":"a"}}`, string(data))
}
