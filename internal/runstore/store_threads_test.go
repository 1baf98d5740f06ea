package runstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The behaviour of every Store with queued runs and threads;
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
		require.NoError(t, s.RecordCall(ctx, id, "search:a", []byte(`{}`)))
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
		_, err = s.Call(ctx, id, "search:a")
		require.ErrorIs(t, err, ErrNotFound, id)
	}
	_, err = s.Call(ctx, other.ID, "search:a")
	require.NoError(t, err, "other threads keep their runs' calls")
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

func testPruneThreads(t *testing.T, s Store) {
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

	pruned, err := s.Prune(ctx, cutoff)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"prun0001", "prun0002", "prun0003"}, ids(pruned))

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
