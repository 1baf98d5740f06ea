package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/internal/runstore"
)

// memEvents is the part of a run store an event log uses, in memory.
type memEvents struct {
	runstore.Store // the rest is not used: calling it panics
	mu             sync.Mutex
	events         []runstore.Event
}

func (m *memEvents) LastEvent(context.Context, string, string) (*runstore.Event, error) {
	return nil, runstore.ErrNotFound
}

func (m *memEvents) AppendEvents(_ context.Context, _ string, evs []runstore.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, evs...)
	return nil
}

func (m *memEvents) stored() []runstore.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]runstore.Event(nil), m.events...)
}

func tokenTexts(t *testing.T, evs []runstore.Event) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		var td tokenData
		require.NoError(t, json.Unmarshal(ev.Data, &td))
		text := td.Text
		if td.Restart {
			text = "<restart>"
		}
		out = append(out, ev.Type+":"+text)
	}
	return out
}

// Tokens join the last token event only while no stream has taken it and
// it is not being stored: a stream never misses text of an event it took,
// and what is stored is what streams were sent.
func TestTokensJoinOnlyUntakenEvents(t *testing.T) {
	store := &memEvents{}
	l, err := openLog(context.Background(), store, "run-1", slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)

	l.token(tokenData{Text: "The"})
	l.token(tokenData{Text: " answer"}) // no stream took "The": it joins
	evs, _, _ := l.since(0)
	assert.Equal(t, []string{"token:The answer"}, tokenTexts(t, evs), "one event, the pieces joined")

	l.token(tokenData{Text: " is"}) // the stream took the event: a new one
	l.token(tokenData{Text: " 42"})
	evs, _, _ = l.since(evs[len(evs)-1].Seq)
	assert.Equal(t, []string{"token: is 42"}, tokenTexts(t, evs))

	l.token(tokenData{Restart: true}) // a restart is an event of its own
	l.token(tokenData{Text: "The"})   // and no text joins it
	l.emit(EventActivity, map[string]string{"kind": "answered"})
	l.token(tokenData{Text: "late"}) // nor another kind of event
	l.flush()
	l.token(tokenData{Text: " piece"}) // stored events are fixed
	big := strings.Repeat("x", maxTokenEvent)
	l.token(tokenData{Text: big}) // over the bound: a new event
	l.close()

	all, _, closed := l.since(0)
	assert.True(t, closed)
	assert.Equal(t, []string{"token:The answer", "token: is 42", "token:<restart>", "token:The", "activity:", "token:late", "token: piece", "token:" + big},
		tokenTexts(t, all))
	assert.Equal(t, tokenTexts(t, all), tokenTexts(t, store.stored()), "the store holds what streams are sent")
	for i := 1; i < len(all); i++ {
		assert.Equal(t, all[i-1].Seq+1, all[i].Seq, "ids follow each other")
	}
}
