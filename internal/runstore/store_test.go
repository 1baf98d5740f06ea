package runstore

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The behaviour every Store has, run against each.

func TestSQLite(t *testing.T) {
	testStore(t, func(t *testing.T) Store { return newSQLite(t).open(t) })
}

func TestPostgres(t *testing.T) {
	testStore(t, func(t *testing.T) Store { return newPostgres(t).open(t) })
}

// testStore runs the behavioural suite; open returns an empty store.
func testStore(t *testing.T, open func(t *testing.T) Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"CreateDuplicate", testCreateDuplicate},
		{"CreateInvalid", testCreateInvalid},
		{"Update", testUpdate},
		{"PutAndProgress", testPutAndProgress},
		{"PutThreadData", testPutThreadData},
		{"Cost", testCost},
		{"UpdateMissing", testUpdateMissing},
		{"GetByPrefix", testGetByPrefix},
		{"PrefixWildcards", testPrefixWildcards},
		{"List", testList},
		{"Delete", testDelete},
		{"Prune", testPrune},
		{"ThreadRuns", testThreadRuns},
		{"Concurrent", testConcurrent},
		{"Queued", testQueued},
		{"Threads", testThreads},
		{"ThreadOfCreate", testThreadOfCreate},
		{"ListThreads", testListThreads},
		{"DeleteThread", testDeleteThread},
		{"PruneThreads", testPruneThreads},
		{"Calls", testCalls},
		{"Claim", testClaim},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, open(t))
		})
	}
}

// base is the start time of the runs of the tests.
func base() time.Time { return time.Date(2025, 3, 14, 15, 9, 26, 535897000, time.UTC) }

func newRun(id string, started time.Time) *Run {
	return &Run{ID: id, Thread: "thread-" + id, Kind: KindResearch, Question: "why " + id + "?",
		Status: StatusDone, Started: started, Updated: started.Add(time.Minute), Ended: started.Add(time.Minute)}
}

func create(t *testing.T, s Store, runs ...*Run) {
	t.Helper()
	for _, r := range runs {
		require.NoError(t, s.Create(t.Context(), r), r.ID)
	}
}

func ids(runs []*Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

// testCost stores a run's cost: nil (unknown) and amounts read back as
// written, by Get and List, and an impossible amount is refused.
func testCost(t *testing.T, s Store) {
	ctx := t.Context()
	r := newRun("cost0001", base())
	create(t, s, r)
	costOf := func() (get, list *float64) {
		t.Helper()
		got, err := s.Get(ctx, r.ID)
		require.NoError(t, err)
		runs, err := s.List(ctx, ListOptions{})
		require.NoError(t, err)
		require.Len(t, runs, 1)
		return got.Cost, runs[0].Cost
	}
	get, list := costOf()
	assert.Nil(t, get, "a run created without a cost has none")
	assert.Nil(t, list)

	for _, usd := range []float64{0.0042, 0, 1234.5678, 1e-9} {
		r.Cost = new(usd)
		require.NoError(t, s.Update(ctx, r))
		get, list = costOf()
		require.NotNil(t, get, "%v", usd)
		require.NotNil(t, list, "%v", usd)
		assert.Equal(t, usd, *get)
		assert.Equal(t, usd, *list)
	}
	r.Cost = nil
	require.NoError(t, s.Update(ctx, r))
	get, list = costOf()
	assert.Nil(t, get, "unknown again")
	assert.Nil(t, list)

	for _, bad := range []float64{-0.01, math.NaN(), math.Inf(1)} {
		r.Cost = new(bad)
		err := s.Update(ctx, r)
		require.ErrorIs(t, err, ErrInvalid, "%v", bad)
		assert.Contains(t, err.Error(), "cost")
		b := newRun("costbad1", base())
		b.Cost = new(bad)
		require.ErrorIs(t, s.Create(ctx, b), ErrInvalid, "%v", bad)
	}
}

func testRoundTrip(t *testing.T, s Store) {
	ctx := t.Context()
	berlin := time.FixedZone("CET", 3600)
	r := &Run{
		ID:       "0123abcd",
		Thread:   "thread 1",
		Kind:     KindAgent,
		Question: "Schreib mir ein Gedicht über 🐘 — and \"quotes\"",
		Status:   StatusFailed,
		Started:  time.Date(2025, 1, 2, 3, 4, 5, 123456789, berlin),
		Updated:  time.Date(2025, 1, 2, 3, 5, 6, 999999999, berlin),
		Ended:    time.Date(2025, 1, 2, 3, 5, 7, 1000, berlin),
		Error:    "model: rate limited (key sk-…redacted)",
		Tokens:   1 << 40,
		Calls:    123,
		Host:     "build-7.example.org",
		PID:      4194304,
		Cost:     new(0.012345678901234567),
		Settings: json.RawMessage(`{"models": {"agent": "openai:gpt-5"},  "nul": "\u0000", "é": [1, 2.5e3]}`),
		Report:   json.RawMessage(`  {"answer":"42"}`),
	}
	create(t, s, r)

	got, err := s.Get(ctx, r.ID)
	require.NoError(t, err)
	want := *r
	want.Started = time.Date(2025, 1, 2, 2, 4, 5, 123456000, time.UTC)
	want.Updated = time.Date(2025, 1, 2, 2, 5, 6, 999999000, time.UTC)
	want.Ended = time.Date(2025, 1, 2, 2, 5, 7, 1000, time.UTC)
	assert.Equal(t, &want, got)
	assert.Equal(t, time.UTC, got.Started.Location())
	assert.Equal(t, string(r.Settings), string(got.Settings), "documents are stored verbatim")

	// The caller's run is not changed, and the returned one is a copy.
	assert.Equal(t, berlin, r.Started.Location())
	got.Settings[0] = '['
	again, err := s.Get(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, &want, again)

	// Zero times and empty documents come back zero and nil.
	bare := &Run{ID: "bare0001", Thread: "t", Kind: KindResearch, Status: StatusRunning, Started: base(), Settings: json.RawMessage{}}
	create(t, s, bare)
	got, err = s.Get(ctx, bare.ID)
	require.NoError(t, err)
	assert.True(t, got.Updated.IsZero())
	assert.True(t, got.Ended.IsZero())
	assert.Nil(t, got.Settings)
	assert.Nil(t, got.Report)

	// Free text becomes valid UTF-8 without NUL.
	odd := newRun("odd00001", base())
	odd.Question, odd.Error, odd.Host = "a\xffb", "c\x00d", "e\xfe"
	create(t, s, odd)
	got, err = s.Get(ctx, odd.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{"a\uFFFDb", "c\uFFFDd", "e\uFFFD"}, []string{got.Question, got.Error, got.Host})
	require.NoError(t, s.Delete(ctx, odd.ID))

	// Summaries leave the documents out.
	list, err := s.List(ctx, ListOptions{})
	require.NoError(t, err)
	require.Len(t, list, 2)
	summary := want
	summary.Settings, summary.Report = nil, nil
	assert.Equal(t, &summary, list[1])
}

func testCreateDuplicate(t *testing.T, s Store) {
	first := newRun("dup00001", base())
	create(t, s, first)
	second := newRun("dup00001", base().Add(time.Hour))
	second.Question = "another"
	err := s.Create(t.Context(), second)
	require.ErrorIs(t, err, ErrExists)
	assert.Contains(t, err.Error(), `"dup00001"`)
	got, err := s.Get(t.Context(), "dup00001")
	require.NoError(t, err)
	assert.Equal(t, first.Question, got.Question)
}

func testCreateInvalid(t *testing.T, s Store) {
	for name, c := range map[string]struct {
		change func(*Run)
		err    error
	}{
		"no id":         {func(r *Run) { r.ID = "" }, ErrInvalid},
		"space in id":   {func(r *Run) { r.ID = "ab cd" }, ErrInvalid},
		"long id":       {func(r *Run) { r.ID = strings.Repeat("a", 65) }, ErrInvalid},
		"no thread":     {func(r *Run) { r.Thread = "" }, ErrInvalid},
		"NUL in thread": {func(r *Run) { r.Thread = "a\x00" }, ErrInvalid},
		"bad UTF-8 id":  {func(r *Run) { r.ID = "abcd\xff" }, ErrInvalid},
		"bad kind":      {func(r *Run) { r.Kind = "chat" }, ErrInvalid},
		"bad status":    {func(r *Run) { r.Status = "paused" }, ErrInvalid},
		"no start":      {func(r *Run) { r.Started = time.Time{} }, ErrInvalid},
		"bad settings":  {func(r *Run) { r.Settings = json.RawMessage(`{"a":`) }, ErrInvalid},
		"bad report":    {func(r *Run) { r.Report = json.RawMessage(`nope`) }, ErrInvalid},
		"huge settings": {func(r *Run) { r.Settings = bigDocument() }, ErrTooLarge},
	} {
		r := newRun("valid001", base())
		c.change(r)
		assert.ErrorIs(t, s.Create(t.Context(), r), c.err, name)
	}
	assert.ErrorIs(t, s.Create(t.Context(), nil), ErrInvalid)
	list, err := s.List(t.Context(), ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list)
}

// bigDocument is a JSON document one byte over MaxDocumentBytes.
func bigDocument() json.RawMessage {
	doc := make([]byte, MaxDocumentBytes+1)
	for i := range doc {
		doc[i] = ' '
	}
	doc[0] = '0'
	return doc
}

func testUpdate(t *testing.T, s Store) {
	ctx := t.Context()
	r := newRun("upd00001", base())
	r.Status, r.Ended, r.Report = StatusRunning, time.Time{}, json.RawMessage(`{"draft":true}`)
	create(t, s, r)

	u := *r
	u.Question = "rephrased"
	u.Status = StatusDone
	u.Updated = base().Add(time.Hour)
	u.Ended = base().Add(time.Hour)
	u.Error = "none"
	u.Tokens, u.Calls = 5000, 7
	u.Host, u.PID = "other", 99
	u.Settings = json.RawMessage(`{"loops":3}`)
	u.Report = nil
	// Not written by Update:
	u.Started = base().Add(24 * time.Hour)
	u.Kind = KindAgent
	u.Thread = "moved"
	require.NoError(t, s.Update(ctx, &u))

	got, err := s.Get(ctx, r.ID)
	require.NoError(t, err)
	want := u
	want.Started, want.Kind, want.Thread = r.Started.UTC(), r.Kind, r.Thread
	assert.Equal(t, &want, got)

	u.Status = "unknown"
	assert.ErrorIs(t, s.Update(ctx, &u), ErrInvalid)
}

func testUpdateMissing(t *testing.T, s Store) {
	create(t, s, newRun("there001", base()))
	err := s.Update(t.Context(), newRun("missing1", base()))
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), `"missing1"`)
	// An update is by the whole id, not by a prefix.
	assert.ErrorIs(t, s.Update(t.Context(), newRun("there", base())), ErrNotFound)
}

func testGetByPrefix(t *testing.T, s Store) {
	ctx := t.Context()
	create(t, s, newRun("abcd1234", base()), newRun("abcd5678", base()), newRun("abce0000", base()), newRun("xyz", base()), newRun("xyz12345", base()))

	got, err := s.Get(ctx, "abcd12")
	require.NoError(t, err)
	assert.Equal(t, "abcd1234", got.ID)
	assert.Equal(t, "why abcd1234?", got.Question)

	got, err = s.Get(ctx, "abce")
	require.NoError(t, err)
	assert.Equal(t, "abce0000", got.ID)

	_, err = s.Get(ctx, "abcd")
	require.ErrorIs(t, err, ErrAmbiguous)
	assert.Contains(t, err.Error(), "abcd1234, abcd5678")
	assert.Contains(t, err.Error(), `"abcd"`)

	// Too short to be a prefix, even a unique one.
	_, err = s.Get(ctx, "abe")
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), "at least 4")
	_, err = s.Get(ctx, "")
	require.ErrorIs(t, err, ErrNotFound)

	// A whole id wins over the ids it starts, whatever its length.
	got, err = s.Get(ctx, "xyz")
	require.NoError(t, err)
	assert.Equal(t, "xyz", got.ID)

	// Ids are case-sensitive.
	_, err = s.Get(ctx, "ABCD1234")
	require.ErrorIs(t, err, ErrNotFound)

	_, err = s.Get(ctx, "zzzz")
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), `"zzzz"`)

	// An ambiguous prefix of many runs lists the first 20.
	for i := range 25 {
		create(t, s, newRun(fmt.Sprintf("many%04d", i), base()))
	}
	_, err = s.Get(ctx, "many")
	require.ErrorIs(t, err, ErrAmbiguous)
	assert.Contains(t, err.Error(), "many0000, many0001, ")
	assert.Contains(t, err.Error(), "many0019, …")
	assert.NotContains(t, err.Error(), "many0020")
}

func testPrefixWildcards(t *testing.T, s Store) {
	ctx := t.Context()
	create(t, s, newRun("run_0001", base()), newRun("runx0002", base()), newRun("100%done", base()), newRun("100x0003", base()),
		newRun(`a!b\0004`, base()), newRun("a!bc0005", base()))

	got, err := s.Get(ctx, "run_")
	require.NoError(t, err, "_ matches itself only")
	assert.Equal(t, "run_0001", got.ID)

	got, err = s.Get(ctx, "100%")
	require.NoError(t, err, "%% matches itself only")
	assert.Equal(t, "100%done", got.ID)

	got, err = s.Get(ctx, `a!b\`)
	require.NoError(t, err, "neither the escape character nor a backslash is special")
	assert.Equal(t, `a!b\0004`, got.ID)

	for _, p := range []string{"%%%%", "____", "r%00", "run%", "_un_"} {
		_, err := s.Get(ctx, p)
		assert.ErrorIs(t, err, ErrNotFound, p)
	}
}

func testList(t *testing.T, s Store) {
	ctx := t.Context()
	list, err := s.List(ctx, ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list)

	a := newRun("aaaa0001", base())
	b := newRun("bbbb0002", base().Add(time.Hour))
	c := newRun("cccc0003", base().Add(2*time.Hour))
	c.Kind = KindAgent
	d := newRun("dddd0004", base().Add(time.Hour)) // same start as b: the greater id first
	d.Thread = b.Thread
	e := newRun("eeee0005", base().Add(-time.Hour))
	e.Kind, e.Thread = KindAgent, b.Thread
	create(t, s, a, b, c, d, e)

	for name, c := range map[string]struct {
		opts ListOptions
		want []string
	}{
		"all":              {ListOptions{}, []string{"cccc0003", "dddd0004", "bbbb0002", "aaaa0001", "eeee0005"}},
		"limit":            {ListOptions{Limit: 2}, []string{"cccc0003", "dddd0004"}},
		"limit over":       {ListOptions{Limit: 10}, []string{"cccc0003", "dddd0004", "bbbb0002", "aaaa0001", "eeee0005"}},
		"negative limit":   {ListOptions{Limit: -1}, []string{"cccc0003", "dddd0004", "bbbb0002", "aaaa0001", "eeee0005"}},
		"kind":             {ListOptions{Kind: KindAgent}, []string{"cccc0003", "eeee0005"}},
		"thread":           {ListOptions{Thread: b.Thread}, []string{"dddd0004", "bbbb0002", "eeee0005"}},
		"thread and kind":  {ListOptions{Thread: b.Thread, Kind: KindResearch, Limit: 1}, []string{"dddd0004"}},
		"no such thread":   {ListOptions{Thread: "nope"}, []string{}},
		"thread and limit": {ListOptions{Thread: b.Thread, Limit: 2}, []string{"dddd0004", "bbbb0002"}},
		"offset":           {ListOptions{Offset: 3}, []string{"aaaa0001", "eeee0005"}},
		"page":             {ListOptions{Limit: 2, Offset: 1}, []string{"dddd0004", "bbbb0002"}},
		"last page":        {ListOptions{Limit: 2, Offset: 4}, []string{"eeee0005"}},
		"offset over":      {ListOptions{Limit: 2, Offset: 5}, []string{}},
		"negative offset":  {ListOptions{Limit: 1, Offset: -1}, []string{"cccc0003"}},
		"thread and page":  {ListOptions{Thread: b.Thread, Limit: 1, Offset: 1}, []string{"bbbb0002"}},
	} {
		list, err := s.List(ctx, c.opts)
		require.NoError(t, err, name)
		assert.Equal(t, c.want, ids(list), name)
	}
}

func testDelete(t *testing.T, s Store) {
	ctx := t.Context()
	create(t, s, newRun("dele0001", base()), newRun("dele0002", base()))
	require.NoError(t, s.Delete(ctx, "dele0001"))
	_, err := s.Get(ctx, "dele0001")
	require.ErrorIs(t, err, ErrNotFound)

	err = s.Delete(ctx, "dele0001")
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), `"dele0001"`)
	require.ErrorIs(t, s.Delete(ctx, "dele"), ErrNotFound, "Delete takes a whole id")

	list, err := s.List(ctx, ListOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"dele0002"}, ids(list))
}

// deadPID returns the pid of a process that has exited: true(1), or else
// this test binary running no test.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if path, err := exec.LookPath("true"); err == nil {
		cmd = exec.Command(path)
	}
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

func testPrune(t *testing.T, s Store) {
	ctx := t.Context()
	now := time.Now()
	cutoff := now.Add(-30 * 24 * time.Hour)
	old := cutoff.Add(-time.Hour)
	host, pid := CurrentProcess()
	running := func(id, host string, pid int, updated time.Time) *Run {
		r := newRun(id, old)
		r.Status, r.Host, r.PID, r.Updated, r.Ended = StatusRunning, host, pid, updated, time.Time{}
		return r
	}
	oldDone := newRun("olddone1", old.Add(-time.Hour))
	oldDone.Settings, oldDone.Report = json.RawMessage(`{}`), json.RawMessage(`{"answer":1}`)
	oldFailed := newRun("oldfail1", old)
	oldFailed.Status = StatusFailed
	oldWaiting := newRun("oldwait1", old)
	oldWaiting.Status = StatusNeedsInput
	create(t, s,
		oldDone, oldFailed, oldWaiting,
		running("crashed1", host, deadPID(t), old),
		running("alive001", host, pid, old),                              // running here: kept, however old
		running("remote01", "elsewhere.example", 1, now.Add(-time.Hour)), // running elsewhere: trusted
		running("remote02", "elsewhere.example", 1, now.Add(-StaleAfter-time.Hour)),
		newRun("newdone1", cutoff.Add(time.Hour)),
	)

	pruned, err := s.Prune(ctx, cutoff)
	require.NoError(t, err)
	assert.Equal(t, []string{"remote02", "oldwait1", "oldfail1", "crashed1", "olddone1"}, ids(pruned), "newest first")
	for _, r := range pruned {
		assert.Nil(t, r.Settings)
		assert.Nil(t, r.Report)
		if r.ID == "oldfail1" {
			assert.Equal(t, StatusFailed, r.Status)
			assert.Equal(t, "why oldfail1?", r.Question)
		}
	}
	list, err := s.List(ctx, ListOptions{})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"alive001", "remote01", "newdone1"}, ids(list))

	pruned, err = s.Prune(ctx, cutoff)
	require.NoError(t, err)
	assert.Empty(t, pruned)
}

func testThreadRuns(t *testing.T, s Store) {
	ctx := t.Context()
	first := newRun("thr00001", base())
	first.Thread = "conversation"
	first.Report = json.RawMessage(`{"answer":"a"}`)
	second := newRun("thr00002", base().Add(time.Hour))
	second.Thread = "conversation"
	third := newRun("thr00003", base().Add(time.Hour)) // same start: by id
	third.Thread, third.Kind = "conversation", KindAgent
	create(t, s, third, second, first, newRun("other001", base()))

	runs, err := s.ThreadRuns(ctx, "conversation")
	require.NoError(t, err)
	assert.Equal(t, []string{"thr00001", "thr00002", "thr00003"}, ids(runs), "oldest first")
	assert.Nil(t, runs[0].Report)
	assert.Equal(t, "why thr00001?", runs[0].Question)

	runs, err = s.ThreadRuns(ctx, "none")
	require.NoError(t, err)
	assert.Empty(t, runs)
}

func testConcurrent(t *testing.T, s Store) {
	ctx := t.Context()
	const workers, updates = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*(updates+2))
	for w := range workers {
		wg.Go(func() {
			r := newRun(fmt.Sprintf("conc%04d", w), base().Add(time.Duration(w)*time.Second))
			r.Status = StatusRunning
			if err := s.Create(ctx, r); err != nil {
				errs <- err
				return
			}
			for i := 1; i <= updates; i++ {
				r.Tokens, r.Calls, r.Updated = int64(i*100), i, r.Updated.Add(time.Second)
				if i == updates {
					r.Status, r.Ended = StatusDone, r.Updated
				}
				if err := s.Update(ctx, r); err != nil {
					errs <- err
				}
			}
			// Every worker also races to create the same run: one wins.
			errs <- s.Create(ctx, newRun("shared01", base()))
		})
	}
	wg.Wait()
	close(errs)
	var won int
	for err := range errs {
		if err == nil {
			won++
			continue
		}
		require.ErrorIs(t, err, ErrExists)
	}
	assert.Equal(t, 1, won)

	list, err := s.List(ctx, ListOptions{})
	require.NoError(t, err)
	require.Len(t, list, workers+1)
	for _, r := range list {
		if r.ID == "shared01" {
			continue
		}
		assert.Equal(t, StatusDone, r.Status, r.ID)
		assert.Equal(t, int64(updates*100), r.Tokens, r.ID)
		assert.Equal(t, updates, r.Calls, r.ID)
	}
}

// testPutAndProgress: Put creates a run (with its thread) or overwrites
// its record without reading it, leaving the spending and the report that
// SetSpending and SetReport write — each only those — as they are.
func testPutAndProgress(t *testing.T, s Store) {
	ctx := t.Context()
	r := newRun("put00001", base())
	r.Status, r.Ended = StatusQueued, time.Time{}
	require.NoError(t, s.Put(ctx, r), "a new run is created")
	got, err := s.Get(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusQueued, got.Status)
	th, err := s.GetThread(ctx, r.Thread)
	require.NoError(t, err, "with its thread")
	assert.Equal(t, 1, th.Runs)
	q := *r
	q.Question = "queued again?"
	require.NoError(t, s.Put(ctx, &q), "a queued run stored already is overwritten")
	got, err = s.Get(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, "queued again?", got.Question)

	usd := 0.25
	require.NoError(t, s.SetSpending(ctx, r.ID, 1200, 4, &usd))
	require.NoError(t, s.SetReport(ctx, r.ID, json.RawMessage(`{"answer":"yes"}`)))
	u := *r
	u.Status, u.Updated, u.Ended, u.Error = StatusDone, base().Add(time.Hour), base().Add(time.Hour), "none"
	u.Settings = json.RawMessage(`{"loops":2}`)
	u.Tokens, u.Calls, u.Cost, u.Report = 1, 1, nil, nil // not written by Put
	require.NoError(t, s.Put(ctx, &u))
	got, err = s.Get(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusDone, got.Status)
	assert.Equal(t, "none", got.Error)
	assert.JSONEq(t, `{"loops":2}`, string(got.Settings))
	assert.Equal(t, int64(1200), got.Tokens, "the spending stays")
	assert.Equal(t, 4, got.Calls)
	require.NotNil(t, got.Cost)
	assert.InDelta(t, 0.25, *got.Cost, 1e-9)
	assert.JSONEq(t, `{"answer":"yes"}`, string(got.Report), "the report stays")

	require.NoError(t, s.SetSpending(ctx, r.ID, 1300, 5, nil))
	got, err = s.Get(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusDone, got.Status, "SetSpending writes the spending only")
	assert.Equal(t, int64(1300), got.Tokens)
	assert.Nil(t, got.Cost)
	assert.JSONEq(t, `{"answer":"yes"}`, string(got.Report))

	assert.ErrorIs(t, s.SetSpending(ctx, "missing1", 1, 1, nil), ErrNotFound)
	assert.ErrorIs(t, s.SetReport(ctx, "missing1", nil), ErrNotFound)
	assert.ErrorIs(t, s.SetReport(ctx, r.ID, json.RawMessage(`{`)), ErrInvalid)
	bad := -1.0
	assert.ErrorIs(t, s.SetSpending(ctx, r.ID, 1, 1, &bad), ErrInvalid)
	u.Status = "unknown"
	assert.ErrorIs(t, s.Put(ctx, &u), ErrInvalid)
}

// testPutThreadData: PutThreadData creates a thread, then replaces only its
// Data.
func testPutThreadData(t *testing.T, s Store) {
	ctx := t.Context()
	th := &Thread{ID: "thread-ptd", Created: base(), Data: json.RawMessage(`{"v":1}`)}
	require.NoError(t, s.PutThreadData(ctx, th))
	got, err := s.GetThread(ctx, th.ID)
	require.NoError(t, err)
	assert.JSONEq(t, `{"v":1}`, string(got.Data))
	assert.True(t, got.Created.Equal(base()))

	again := &Thread{ID: th.ID, Created: base().Add(time.Hour), Data: json.RawMessage(`{"v":2}`)}
	require.NoError(t, s.PutThreadData(ctx, again))
	got, err = s.GetThread(ctx, th.ID)
	require.NoError(t, err)
	assert.JSONEq(t, `{"v":2}`, string(got.Data))
	assert.True(t, got.Created.Equal(base()), "the rest stays as stored")
	assert.ErrorIs(t, s.PutThreadData(ctx, &Thread{ID: th.ID, Created: base(), Data: json.RawMessage(`[`)}), ErrInvalid)
}
