package checkpointtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

// LegacyRow is one stored document of a thread written by deepgraph before
// checkpoints had namespaces and channels (format 1, store schema 1).
type LegacyRow struct {
	ID, Parent string
	Step       int
	Source     string
	Created    string // RFC 3339
	Doc        []byte // the checkpoint, as stored
	Records    map[int][]byte
}

// LegacyThread returns the rows of thread as an older deepgraph stored them:
// the review graph of the suite (draft → review → publish) paused at the
// review's interrupt. A store's migration test writes them in its old
// schema, opens the store, and passes it to CheckLegacyThread.
func LegacyThread(thread string) []LegacyRow {
	const in, afterDraft = "000000-1878a2b3c4d5e6f7-0a1b2c3d", "000001-1878a2b3c4d5e6f8-4e5f6a7b"
	sum := sha256.Sum256([]byte(thread + "\x00" + afterDraft + "\x00" + "0" + "\x00" + "#0"))
	id := hex.EncodeToString(sum[:8]) // the interrupt's id, as older versions derived it
	doc := func(v any) []byte {
		data, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return data
	}
	return []LegacyRow{
		{ID: in, Step: 0, Source: "input", Created: "2026-06-01T10:00:00Z",
			Doc: doc(map[string]any{"format": 1, "thread": thread, "id": in, "step": 0, "state": map[string]any{"items": nil, "log": nil, "note": ""},
				"next": []any{map[string]any{"node": "draft"}}, "created": "2026-06-01T10:00:00Z", "source": "input"})},
		{ID: afterDraft, Parent: in, Step: 1, Source: "loop", Created: "2026-06-01T10:00:01Z",
			Doc: doc(map[string]any{"format": 1, "thread": thread, "id": afterDraft, "parent": in, "step": 1,
				"state": map[string]any{"items": nil, "log": nil, "note": "first draft"}, "next": []any{map[string]any{"node": "review"}},
				"created": "2026-06-01T10:00:01Z", "source": "loop", "ran": []string{"draft"}}),
			Records: map[int][]byte{0: doc(map[string]any{"task": 0, "node": "review", "interrupts": []any{map[string]any{
				"id": id, "kind": "node", "node": "review", "task": 0, "step": 2, "payload": map[string]any{"draft": "first draft", "approved": false}}}})}},
	}
}

// CheckLegacyThread reads and finishes, on s, the thread LegacyThread
// wrote: its history and pending interrupt read back, and an answer
// resumes it where it paused.
func CheckLegacyThread(t *testing.T, s graph.Checkpointer, thread string) {
	var calls counter
	g, err := reviewGraph(s, &calls)
	require.NoError(t, err)
	snap, err := g.State(ctx(t), graph.Thread(thread))
	require.NoError(t, err)
	assert.Equal(t, "first draft", snap.State.Note)
	assert.Equal(t, []string{"review"}, snap.Next)
	require.Len(t, snap.Interrupts, 1)
	p, err := graph.PayloadOf[approval](snap.Interrupts[0])
	require.NoError(t, err)
	assert.Equal(t, "first draft", p.Draft)
	hist, err := g.History(ctx(t), graph.Thread(thread), 0)
	require.NoError(t, err)
	require.Len(t, hist, 2)

	out, err := g.Resume(ctx(t), graph.Thread(thread), graph.Answer(approval{Approved: true, Edit: "edited"}))
	require.NoError(t, err, "the old thread's interrupt is answered by its old id")
	assert.Equal(t, []string{"reviewed approved=true", "published: edited"}, out.Log)
	assert.Equal(t, 0, calls.get("draft"), "the finished step is not run again")
	hist, err = g.History(ctx(t), graph.Thread(thread), 0)
	require.NoError(t, err)
	assert.Len(t, hist, 4, "the new checkpoints follow the old ones")
}
