package runstore

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The behaviour of every Store with queued runs, event logs and threads;
// testStore runs these too.

func testQueued(t *testing.T, s Store) {
	ctx := t.Context()
	old := time.Now().Add(-365 * 24 * time.Hour)
	r := newRun("queu0001", old)
	r.Status, r.Ended, r.Updated = StatusQueued, time.Time{}, time.Time{}
	create(t, s, r)

	got, err := s.Get(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusQueued, got.Status)
	assert.Equal(t, StatusQueued, got.Effective(time.Now(), Alive), "no process to check")

	// An update may put a run back in the queue.
	back := newRun("queu0002", old)
	create(t, s, back)
	back.Status = StatusQueued
	require.NoError(t, s.Update(ctx, back))

	pruned, err := s.Prune(ctx, time.Now())
	require.NoError(t, err)
	assert.Empty(t, pruned, "queued runs are never pruned")
	list, err := s.List(ctx, ListOptions{})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"queu0001", "queu0002"}, ids(list))
}

// event is an event of the tests: seq, type and a small document.
func event(seq int64, typ string) Event {
	return Event{Seq: seq, Type: typ, At: base().Add(time.Duration(seq) * time.Second), Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, seq))}
}

func seqs(evs []Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func testEvents(t *testing.T, s Store) {
	ctx := t.Context()
	create(t, s, newRun("evts0001", base()), newRun("evts0002", base()))

	berlin := time.FixedZone("CET", 3600)
	first := Event{Seq: 1, Type: "activity", At: time.Date(2025, 3, 14, 16, 0, 0, 123456789, berlin),
		Data: json.RawMessage(` {"text": "Suche 🐘", "nul": "\u0000",  "n": [1, 2.5e3]} `)}
	require.NoError(t, s.AppendEvents(ctx, "evts0001", []Event{first, event(2, "token")}))
	require.NoError(t, s.AppendEvents(ctx, "evts0001", []Event{event(4, "token"), event(3, "token")}), "out of order")
	require.NoError(t, s.AppendEvents(ctx, "evts0002", []Event{event(1, "end")}), "seqs are per run")
	require.NoError(t, s.AppendEvents(ctx, "evts0001", nil), "nothing to append")
	require.NoError(t, s.AppendEvents(ctx, "nosuchrun", []Event{}), "nothing to append, to no run")

	evs, err := s.Events(ctx, "evts0001", 0, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3, 4}, seqs(evs))
	assert.Equal(t, Event{Seq: 1, Type: "activity", At: time.Date(2025, 3, 14, 15, 0, 0, 123456000, time.UTC), Data: first.Data}, evs[0])
	assert.Equal(t, string(first.Data), string(evs[0].Data), "data is stored verbatim")
	assert.Equal(t, time.UTC, evs[0].At.Location())
	assert.Equal(t, event(3, "token"), evs[2])

	for name, c := range map[string]struct {
		after int64
		limit int
		want  []int64
	}{
		"after":          {2, 0, []int64{3, 4}},
		"limit":          {0, 2, []int64{1, 2}},
		"after, limit":   {1, 2, []int64{2, 3}},
		"negative limit": {3, -1, []int64{4}},
		"negative after": {-5, 1, []int64{1}},
		"after the last": {4, 0, []int64{}},
	} {
		evs, err := s.Events(ctx, "evts0001", c.after, c.limit)
		require.NoError(t, err, name)
		assert.Equal(t, c.want, seqs(evs), name)
	}

	// No run, or no events: an empty slice.
	for _, id := range []string{"evts0003", "evts", ""} {
		evs, err := s.Events(ctx, id, 0, 0)
		require.NoError(t, err, id)
		assert.NotNil(t, evs, id)
		assert.Empty(t, evs, id)
	}

	// A zero time stays zero; the returned data is a copy.
	require.NoError(t, s.AppendEvents(ctx, "evts0002", []Event{{Seq: 2, Type: "end", Data: json.RawMessage(`null`)}}))
	evs, err = s.Events(ctx, "evts0002", 1, 0)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.True(t, evs[0].At.IsZero())
	assert.Equal(t, "null", string(evs[0].Data))
	evs[0].Data[0] = 'x'
	evs, err = s.Events(ctx, "evts0002", 1, 0)
	require.NoError(t, err)
	assert.Equal(t, "null", string(evs[0].Data))

	data, err := json.Marshal(evs[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"seq":2,"type":"end","at":"0001-01-01T00:00:00Z","data":null}`, string(data))
}

func testAppendEventsErrors(t *testing.T, s Store) {
	ctx := t.Context()
	create(t, s, newRun("apnd0001", base()))
	require.NoError(t, s.AppendEvents(ctx, "apnd0001", []Event{event(1, "a"), event(2, "a")}))

	err := s.AppendEvents(ctx, "apnd", []Event{event(3, "a")})
	require.ErrorIs(t, err, ErrNotFound, "a whole id, not a prefix")
	assert.Contains(t, err.Error(), `"apnd"`)

	err = s.AppendEvents(ctx, "apnd0001", []Event{event(3, "a"), event(2, "b"), event(4, "a")})
	require.ErrorIs(t, err, ErrExists)
	assert.Contains(t, err.Error(), `run "apnd0001" already has an event with seq 2`)

	for name, c := range map[string]struct {
		change func(*Event)
		err    error
	}{
		"seq 0":          {func(e *Event) { e.Seq = 0 }, ErrInvalid},
		"negative seq":   {func(e *Event) { e.Seq = -1 }, ErrInvalid},
		"no type":        {func(e *Event) { e.Type = "" }, ErrInvalid},
		"long type":      {func(e *Event) { e.Type = strings.Repeat("t", MaxEventTypeBytes+1) }, ErrInvalid},
		"NUL in type":    {func(e *Event) { e.Type = "a\x00" }, ErrInvalid},
		"bad UTF-8 type": {func(e *Event) { e.Type = "a\xff" }, ErrInvalid},
		"no data":        {func(e *Event) { e.Data = nil }, ErrInvalid},
		"bad data":       {func(e *Event) { e.Data = json.RawMessage(`{"a":`) }, ErrInvalid},
		"two documents":  {func(e *Event) { e.Data = json.RawMessage(`{} {}`) }, ErrInvalid},
		"huge data":      {func(e *Event) { e.Data = bigDocument() }, ErrTooLarge},
	} {
		bad := event(6, "a")
		c.change(&bad)
		// The valid events given with it are not stored either.
		assert.ErrorIs(t, s.AppendEvents(ctx, "apnd0001", []Event{event(5, "a"), bad}), c.err, name)
	}
	long := event(5, strings.Repeat("t", MaxEventTypeBytes))
	require.NoError(t, s.AppendEvents(ctx, "apnd0001", []Event{long}), "a type of the greatest length")

	err = s.AppendEvents(ctx, "apnd0001", []Event{event(7, "a"), event(8, "a"), event(7, "b")})
	require.ErrorIs(t, err, ErrInvalid, "a seq given twice")
	assert.Contains(t, err.Error(), "seq 7")

	evs, err := s.Events(ctx, "apnd0001", 0, 0)
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2, 5}, seqs(evs), "failed appends store nothing")
	assert.Equal(t, "a", evs[1].Type)
}

func testAppendManyEvents(t *testing.T, s Store) {
	ctx := t.Context()
	create(t, s, newRun("many0001", base()))
	const n = 1234 // more than one INSERT's worth
	evs := make([]Event, n)
	for i := range evs {
		evs[i] = event(int64(i+1), "token")
	}
	require.NoError(t, s.AppendEvents(ctx, "many0001", evs))
	got, err := s.Events(ctx, "many0001", 0, 0)
	require.NoError(t, err)
	require.Len(t, got, n)
	assert.Equal(t, evs, got)

	// A taken seq in a later statement undoes the earlier ones too.
	more := make([]Event, n)
	for i := range more {
		more[i] = event(int64(n+1+i), "token")
	}
	more[n-1].Seq = n
	err = s.AppendEvents(ctx, "many0001", more)
	require.ErrorIs(t, err, ErrExists)
	assert.Contains(t, err.Error(), fmt.Sprintf("seq %d", n))
	got, err = s.Events(ctx, "many0001", n, 0)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func testLastEvent(t *testing.T, s Store) {
	ctx := t.Context()
	create(t, s, newRun("last0001", base()), newRun("last0002", base()))

	_, err := s.LastEvent(ctx, "last0001", "")
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), `"last0001"`)

	require.NoError(t, s.AppendEvents(ctx, "last0001", []Event{
		event(1, "activity"), event(2, "token"), event(5, "activity"), event(4, "token"), event(3, "end"),
	}))
	require.NoError(t, s.AppendEvents(ctx, "last0002", []Event{event(9, "token")}))

	for typ, want := range map[string]int64{"": 5, "activity": 5, "token": 4, "end": 3} {
		e, err := s.LastEvent(ctx, "last0001", typ)
		require.NoError(t, err, typ)
		assert.Equal(t, want, e.Seq, typ)
		if typ == "token" {
			assert.Equal(t, event(4, "token"), *e)
		}
	}

	_, err = s.LastEvent(ctx, "last0001", "tok")
	require.ErrorIs(t, err, ErrNotFound, "a whole type, not a prefix")
	assert.Contains(t, err.Error(), `type "tok"`)
	_, err = s.LastEvent(ctx, "last", "")
	require.ErrorIs(t, err, ErrNotFound, "a whole run id")
	_, err = s.LastEvent(ctx, "nosuchrun", "token")
	require.ErrorIs(t, err, ErrNotFound)
}

func testConcurrentEvents(t *testing.T, s Store) {
	ctx := t.Context()
	create(t, s, newRun("conc0001", base()))
	const writers, batches, size = 6, 8, 5
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				evs := make([]Event, size)
				for i := range evs {
					// Writer w takes the seqs w+1, w+1+writers, …
					evs[i] = event(int64((b*size+i)*writers+w+1), fmt.Sprintf("writer%d", w))
				}
				if err := s.AppendEvents(ctx, "conc0001", evs); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	evs, err := s.Events(ctx, "conc0001", 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, writers*batches*size)
	for i, e := range evs {
		assert.Equal(t, int64(i+1), e.Seq)
		assert.Equal(t, fmt.Sprintf("writer%d", i%writers), e.Type)
	}
	for w := range writers {
		e, err := s.LastEvent(ctx, "conc0001", fmt.Sprintf("writer%d", w))
		require.NoError(t, err)
		assert.Equal(t, int64(writers*batches*size-writers+w+1), e.Seq)
	}
}

func testDeleteRemovesEvents(t *testing.T, s Store) {
	ctx := t.Context()
	r := newRun("delv0001", base())
	create(t, s, r, newRun("delv0002", base()))
	require.NoError(t, s.AppendEvents(ctx, "delv0001", []Event{event(1, "a"), event(2, "b")}))
	require.NoError(t, s.AppendEvents(ctx, "delv0002", []Event{event(1, "a")}))
	require.NoError(t, s.Delete(ctx, "delv0001"))

	evs, err := s.Events(ctx, "delv0001", 0, 0)
	require.NoError(t, err)
	assert.Empty(t, evs)
	err = s.AppendEvents(ctx, "delv0001", []Event{event(3, "a")})
	require.ErrorIs(t, err, ErrNotFound, "no events for a deleted run")

	// A new run with the id starts a new log.
	create(t, s, r)
	require.NoError(t, s.AppendEvents(ctx, "delv0001", []Event{event(1, "c")}))
	evs, err = s.Events(ctx, "delv0001", 0, 0)
	require.NoError(t, err)
	assert.Equal(t, []Event{event(1, "c")}, evs)

	// The other run keeps its events, and the thread of the deleted run
	// its row.
	evs, err = s.Events(ctx, "delv0002", 0, 0)
	require.NoError(t, err)
	assert.Len(t, evs, 1)
	require.NoError(t, s.Delete(ctx, "delv0001"))
	th, err := s.GetThread(ctx, r.Thread)
	require.NoError(t, err)
	assert.Equal(t, 0, th.Runs)
}

func testThreads(t *testing.T, s Store) {
	ctx := t.Context()
	berlin := time.FixedZone("CET", 3600)
	th := &Thread{ID: "thrd0001", Title: "Über 🐘", Created: time.Date(2025, 1, 2, 3, 4, 5, 123456789, berlin), Runs: 99}
	require.NoError(t, s.CreateThread(ctx, th))
	got, err := s.GetThread(ctx, "thrd0001")
	require.NoError(t, err)
	created := time.Date(2025, 1, 2, 2, 4, 5, 123456000, time.UTC)
	assert.Equal(t, &Thread{ID: "thrd0001", Title: "Über 🐘", Created: created, Updated: created}, got,
		"no kind, Updated is Created, Runs is counted")

	withAll := &Thread{ID: "thrd0002", Kind: KindAgent, Title: "t\xff", Created: base(), Updated: base().Add(time.Hour)}
	require.NoError(t, s.CreateThread(ctx, withAll))
	got, err = s.GetThread(ctx, "thrd0002")
	require.NoError(t, err)
	assert.Equal(t, &Thread{ID: "thrd0002", Kind: KindAgent, Title: "t\uFFFD", Created: base(), Updated: base().Add(time.Hour)}, got)

	err = s.CreateThread(ctx, &Thread{ID: "thrd0001", Created: base()})
	require.ErrorIs(t, err, ErrExists)
	assert.Contains(t, err.Error(), `"thrd0001"`)
	create(t, s, newRun("thrd0003", base()))
	err = s.CreateThread(ctx, &Thread{ID: "thread-thrd0003", Created: base()})
	require.ErrorIs(t, err, ErrExists, "the thread of a run")

	for name, bad := range map[string]*Thread{
		"nil":          nil,
		"no id":        {Created: base()},
		"NUL in id":    {ID: "a\x00", Created: base()},
		"bad UTF-8 id": {ID: "a\xff", Created: base()},
		"no created":   {ID: "thrd0009"},
		"bad kind":     {ID: "thrd0009", Kind: "chat", Created: base()},
	} {
		assert.ErrorIs(t, s.CreateThread(ctx, bad), ErrInvalid, name)
	}
	_, err = s.GetThread(ctx, "thrd0009")
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), `"thrd0009"`)
	_, err = s.GetThread(ctx, "thrd")
	require.ErrorIs(t, err, ErrNotFound, "a whole id, not a prefix")

	// Data: stored with the thread, replaced, removed; validated.
	withData := &Thread{ID: "thrd0004", Created: base(), Data: json.RawMessage(`{"metadata":{"graph_id":"agent"}}`)}
	require.NoError(t, s.CreateThread(ctx, withData))
	got, err = s.GetThread(ctx, "thrd0004")
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"graph_id":"agent"}}`, string(got.Data))
	require.NoError(t, s.SetThreadData(ctx, "thrd0004", json.RawMessage(`{"status":"idle"}`)))
	list, err := s.ListThreads(ctx, ThreadListOptions{})
	require.NoError(t, err)
	byID := map[string]*Thread{}
	for _, th := range list {
		byID[th.ID] = th
	}
	assert.JSONEq(t, `{"status":"idle"}`, string(byID["thrd0004"].Data), "ListThreads reads it")
	assert.Nil(t, byID["thrd0001"].Data, "a thread without data")
	require.NoError(t, s.SetThreadData(ctx, "thrd0004", nil))
	got, err = s.GetThread(ctx, "thrd0004")
	require.NoError(t, err)
	assert.Nil(t, got.Data)
	assert.ErrorIs(t, s.SetThreadData(ctx, "thrd0009", json.RawMessage(`{}`)), ErrNotFound)
	assert.ErrorIs(t, s.SetThreadData(ctx, "thrd0004", json.RawMessage(`{"a":`)), ErrInvalid)
	assert.ErrorIs(t, s.CreateThread(ctx, &Thread{ID: "thrd0005", Created: base(), Data: json.RawMessage(`nope`)}), ErrInvalid)
	assert.ErrorIs(t, s.SetThreadData(ctx, "thrd0004", json.RawMessage(bigDocument())), ErrTooLarge)

	data, err := json.Marshal(&Thread{ID: "t", Created: base(), Updated: base()})
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"t","created":"2025-03-14T15:09:26.535897Z","updated":"2025-03-14T15:09:26.535897Z","runs":0}`, string(data))
}

func testThreadOfCreate(t *testing.T, s Store) {
	ctx := t.Context()
	second := func(id string, started time.Time) *Run {
		r := newRun(id, started)
		r.Thread = "conversation"
		return r
	}
	first := second("conv0001", base())
	first.Kind, first.Question = KindAgent, "a\x00b"
	create(t, s, first)
	got, err := s.GetThread(ctx, "conversation")
	require.NoError(t, err)
	assert.Equal(t, &Thread{ID: "conversation", Kind: KindAgent, Title: "a\uFFFDb", Created: base(), Updated: base(), Runs: 1}, got)

	// A later run moves Updated; an earlier one does not; Kind, Title and
	// Created stay the first run's.
	create(t, s, second("conv0002", base().Add(time.Hour)), second("conv0003", base().Add(-time.Hour)))
	got, err = s.GetThread(ctx, "conversation")
	require.NoError(t, err)
	assert.Equal(t, &Thread{ID: "conversation", Kind: KindAgent, Title: "a\uFFFDb", Created: base(), Updated: base().Add(time.Hour), Runs: 3}, got)

	// A run that is not created changes nothing.
	dup := second("conv0002", base().Add(2*time.Hour))
	require.ErrorIs(t, s.Create(ctx, dup), ErrExists)
	got, err = s.GetThread(ctx, "conversation")
	require.NoError(t, err)
	assert.Equal(t, base().Add(time.Hour), got.Updated)
	assert.Equal(t, 3, got.Runs)

	// A thread created empty gets its kind and title from its first run,
	// unless it has them.
	require.NoError(t, s.CreateThread(ctx, &Thread{ID: "empty", Created: base()}))
	require.NoError(t, s.CreateThread(ctx, &Thread{ID: "titled", Title: "My title", Created: base().Add(time.Hour)}))
	r := newRun("empt0001", base().Add(time.Minute))
	r.Thread = "empty"
	create(t, s, r)
	r = newRun("titl0001", base().Add(time.Minute))
	r.Thread = "titled"
	create(t, s, r)
	got, err = s.GetThread(ctx, "empty")
	require.NoError(t, err)
	assert.Equal(t, &Thread{ID: "empty", Kind: KindResearch, Title: "why empt0001?", Created: base(), Updated: base().Add(time.Minute), Runs: 1}, got)
	got, err = s.GetThread(ctx, "titled")
	require.NoError(t, err)
	assert.Equal(t, &Thread{ID: "titled", Kind: KindResearch, Title: "My title", Created: base().Add(time.Hour), Updated: base().Add(time.Hour), Runs: 1}, got,
		"an earlier run leaves Updated")
}

func testListThreads(t *testing.T, s Store) {
	ctx := t.Context()
	list, err := s.ListThreads(ctx, ThreadListOptions{})
	require.NoError(t, err)
	assert.NotNil(t, list)
	assert.Empty(t, list)

	require.NoError(t, s.CreateThread(ctx, &Thread{ID: "a-empty", Created: base().Add(3 * time.Hour)}))
	require.NoError(t, s.CreateThread(ctx, &Thread{ID: "B-empty", Created: base().Add(3 * time.Hour)})) // same Updated: by id, byte by byte
	r := newRun("list0001", base())
	r.Thread = "c-runs"
	r2 := newRun("list0002", base().Add(4*time.Hour)) // the newest run
	r2.Thread = "c-runs"
	create(t, s, r, r2, newRun("list0003", base().Add(time.Hour)), newRun("list0004", base().Add(2*time.Hour)))

	threadIDs := func(list []*Thread) []string {
		out := make([]string, len(list))
		for i, th := range list {
			out[i] = th.ID
		}
		return out
	}
	all := []string{"c-runs", "a-empty", "B-empty", "thread-list0004", "thread-list0003"}
	for name, c := range map[string]struct {
		opts ThreadListOptions
		want []string
	}{
		"all":            {ThreadListOptions{}, all},
		"negative":       {ThreadListOptions{Limit: -1, Offset: -1}, all},
		"limit":          {ThreadListOptions{Limit: 2}, all[:2]},
		"offset":         {ThreadListOptions{Offset: 2}, all[2:]},
		"page":           {ThreadListOptions{Limit: 2, Offset: 2}, all[2:4]},
		"last page":      {ThreadListOptions{Limit: 2, Offset: 4}, all[4:]},
		"past the end":   {ThreadListOptions{Limit: 2, Offset: 5}, []string{}},
		"limit too high": {ThreadListOptions{Limit: 50}, all},
	} {
		list, err := s.ListThreads(ctx, c.opts)
		require.NoError(t, err, name)
		assert.Equal(t, c.want, threadIDs(list), name)
	}
	list, err = s.ListThreads(ctx, ThreadListOptions{Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, &Thread{ID: "c-runs", Kind: KindResearch, Title: "why list0001?", Created: base(), Updated: base().Add(4 * time.Hour), Runs: 2}, list[0])
	list, err = s.ListThreads(ctx, ThreadListOptions{Offset: 1, Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, 0, list[0].Runs)
}

func testDeleteThread(t *testing.T, s Store) {
	ctx := t.Context()
	a, b := newRun("delt0001", base()), newRun("delt0002", base().Add(time.Hour))
	a.Thread, b.Thread = "doomed", "doomed"
	other := newRun("delt0003", base())
	create(t, s, a, b, other)
	for _, id := range []string{a.ID, b.ID, other.ID} {
		require.NoError(t, s.AppendEvents(ctx, id, []Event{event(1, "a"), event(2, "b")}))
	}

	require.NoError(t, s.DeleteThread(ctx, "doomed"))
	_, err := s.GetThread(ctx, "doomed")
	require.ErrorIs(t, err, ErrNotFound)
	runs, err := s.ThreadRuns(ctx, "doomed")
	require.NoError(t, err)
	assert.Empty(t, runs)
	for _, id := range []string{a.ID, b.ID} {
		_, err := s.Get(ctx, id)
		require.ErrorIs(t, err, ErrNotFound, id)
		evs, err := s.Events(ctx, id, 0, 0)
		require.NoError(t, err)
		assert.Empty(t, evs, id)
	}
	evs, err := s.Events(ctx, other.ID, 0, 0)
	require.NoError(t, err)
	assert.Len(t, evs, 2, "other threads keep their runs' events")
	_, err = s.GetThread(ctx, other.Thread)
	require.NoError(t, err)

	err = s.DeleteThread(ctx, "doomed")
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), `"doomed"`)
	require.ErrorIs(t, s.DeleteThread(ctx, "thread-delt"), ErrNotFound, "a whole id")

	// A thread without runs, and one whose runs were deleted.
	require.NoError(t, s.CreateThread(ctx, &Thread{ID: "bare", Created: base()}))
	require.NoError(t, s.DeleteThread(ctx, "bare"))
	require.NoError(t, s.Delete(ctx, other.ID))
	require.NoError(t, s.DeleteThread(ctx, other.Thread))
	list, err := s.ListThreads(ctx, ThreadListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list)
}

func testPruneEventsAndThreads(t *testing.T, s Store) {
	ctx := t.Context()
	cutoff := time.Now().Add(-30 * 24 * time.Hour)
	old := cutoff.Add(-time.Hour)
	gone1, gone2 := newRun("prun0001", old), newRun("prun0002", old)
	gone1.Thread, gone2.Thread = "all-old", "all-old"
	half := newRun("prun0003", old)
	half.Thread = "half-old"
	fresh := newRun("prun0004", cutoff.Add(time.Hour))
	fresh.Thread = "half-old"
	queued := newRun("prun0005", old)
	queued.Thread, queued.Status = "queued-old", StatusQueued
	create(t, s, gone1, gone2, half, fresh, queued)
	require.NoError(t, s.CreateThread(ctx, &Thread{ID: "never-run", Created: old}))
	for _, r := range []*Run{gone1, gone2, half, fresh, queued} {
		require.NoError(t, s.AppendEvents(ctx, r.ID, []Event{event(1, "a")}))
	}

	pruned, err := s.Prune(ctx, cutoff)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"prun0001", "prun0002", "prun0003"}, ids(pruned))

	for _, r := range pruned {
		evs, err := s.Events(ctx, r.ID, 0, 0)
		require.NoError(t, err)
		assert.Empty(t, evs, r.ID)
	}
	for _, id := range []string{fresh.ID, queued.ID} {
		evs, err := s.Events(ctx, id, 0, 0)
		require.NoError(t, err)
		assert.Len(t, evs, 1, id)
	}
	_, err = s.GetThread(ctx, "all-old")
	require.ErrorIs(t, err, ErrNotFound, "all its runs were pruned")
	th, err := s.GetThread(ctx, "half-old")
	require.NoError(t, err)
	assert.Equal(t, 1, th.Runs)
	for _, id := range []string{"queued-old", "never-run"} {
		_, err := s.GetThread(ctx, id)
		require.NoError(t, err, id)
	}
}
