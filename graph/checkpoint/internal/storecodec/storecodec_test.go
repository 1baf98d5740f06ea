package storecodec

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

func sample() *graph.Checkpoint {
	return &graph.Checkpoint{Format: graph.CheckpointFormat, Thread: "t", ID: "c", Parent: "p", Step: 2,
		State: json.RawMessage(`{"a":1}`), Next: []graph.PendingTask{{Node: "n", Arg: json.RawMessage(`"x"`)}},
		Created: time.Unix(1700000000, 5).UTC(), Source: graph.SourceLoop, Ran: []string{"n"}, Run: "r",
		Writes: []graph.TaskWrite{{Task: 0, Node: "n"}}}
}

func TestRoundTrip(t *testing.T) {
	data, err := EncodeCheckpoint(sample())
	require.NoError(t, err)
	got, err := DecodeCheckpoint(data, 0)
	require.NoError(t, err)
	want := sample()
	want.Writes = nil
	assert.Equal(t, want, got)

	w := graph.TaskWrite{Task: 3, Node: "n", Interrupts: []graph.PendingInterrupt{{ID: "i", Kind: graph.InterruptNode, Node: "n", Task: 3, Payload: json.RawMessage(`{}`)}},
		Answers: []graph.AnswerRecord{{ID: "i", Value: json.RawMessage(`true`)}}}
	data, err = EncodeWrite(w)
	require.NoError(t, err)
	gw, err := DecodeWrite(data, 0)
	require.NoError(t, err)
	assert.Equal(t, w, gw)
}

// A record that DecodeWrite would refuse is not encoded: every store
// refuses to store it.
func TestEncodeWriteRefusesWhatCannotBeReadBack(t *testing.T) {
	for _, bad := range []graph.TaskWrite{{Task: -1, Node: "a"}, {Task: 2}} {
		_, err := EncodeWrite(bad)
		require.Error(t, err, "%+v", bad)
		assert.Contains(t, err.Error(), "needs a node and a task index")
	}
}

func TestDecodeRefusals(t *testing.T) {
	cases := map[string]struct {
		data string
		want error
		text string
	}{
		"not JSON":      {"\x00\x01garbage", ErrCorrupt, "corrupt"},
		"unknown field": {`{"format":1,"thread":"t","id":"c","state":{},"created":"2026-01-01T00:00:00Z","source":"loop","evil":1}`, ErrCorrupt, "evil"},
		"newer format":  {`{"format":9,"thread":"t","id":"c"}`, graph.ErrCheckpointFormat, "upgrade"},
		"no thread":     {`{"format":1,"id":"c","state":{},"created":"2026-01-01T00:00:00Z"}`, ErrCorrupt, "thread"},
		"negative step": {`{"format":1,"thread":"t","id":"c","step":-1,"state":{},"created":"2026-01-01T00:00:00Z"}`, ErrCorrupt, "step"},
		"trailing data": {`{"format":1,"thread":"t","id":"c","state":{},"created":"2026-01-01T00:00:00Z"} {}`, ErrCorrupt, "after top-level value"},
		"wrong types":   {`{"format":1,"thread":7,"id":"c"}`, ErrCorrupt, "thread"},
		"state too big": {`{"format":1,"thread":"t","id":"c","state":"` + strings.Repeat("x", 200) + `"}`, graph.ErrCheckpointTooLarge, "limit of 100"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			max := 0
			if name == "state too big" {
				max = 100
			}
			_, err := DecodeCheckpoint([]byte(tc.data), max)
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.want), "%v", err)
			assert.Contains(t, err.Error(), tc.text)
		})
	}
	_, err := DecodeWrite([]byte(`{"task":-2,"node":"n"}`), 0)
	assert.ErrorIs(t, err, ErrCorrupt)
	_, err = DecodeWrite([]byte(`{"task":1,"node":"n","update":{},"extra":true}`), 0)
	assert.ErrorIs(t, err, ErrCorrupt)
}

func TestCheck(t *testing.T) {
	cp := sample()
	assert.NoError(t, Check(cp, "p", true))
	var ce *graph.ConflictingCheckpointError
	require.ErrorAs(t, Check(cp, "q", true), &ce)
	assert.Equal(t, "q", ce.Newest)
	cp.Source = graph.SourceFork
	assert.NoError(t, Check(cp, "q", true))
	assert.Error(t, Check(cp, "q", false))
}

// FuzzDecode feeds arbitrary stored bytes to the decoders: they return a
// value or an error, never panic, and what they accept re-encodes to
// something they accept again.
func FuzzDecode(f *testing.F) {
	data, _ := EncodeCheckpoint(sample())
	f.Add(data)
	f.Add([]byte(`{"task":1,"node":"n","update":{"writes":[]}}`))
	f.Add([]byte(`{"format":1,"thread":"t","id":"c","next":[{"node":"n","arg":{"deep":[[[[1]]]]}}]}`))
	f.Add([]byte(`{"format":1e400}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if cp, err := DecodeCheckpoint(data, 1<<16); err == nil {
			again, err := EncodeCheckpoint(cp)
			require.NoError(t, err)
			_, err = DecodeCheckpoint(again, 1<<20)
			require.NoError(t, err)
		}
		if w, err := DecodeWrite(data, 1<<16); err == nil {
			again, err := EncodeWrite(w)
			require.NoError(t, err)
			_, err = DecodeWrite(again, 1<<20)
			require.NoError(t, err)
		}
	})
}
