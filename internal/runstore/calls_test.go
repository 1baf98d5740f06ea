package runstore

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testCalls records calls of a run and reads them back; the first result
// of a key stays; the calls go with the run, by each way of removing it.
func testCalls(t *testing.T, s Store) {
	ctx := t.Context()
	create(t, s, newRun("call0001", base()), newRun("call0002", base()))

	_, err := s.Call(ctx, "call0001", "search:abc")
	require.ErrorIs(t, err, ErrNotFound, "nothing recorded yet")

	require.NoError(t, s.RecordCall(ctx, "call0001", "search:abc", []byte(`[{"url":"https://a.example"}]`)))
	require.NoError(t, s.RecordCall(ctx, "call0001", "search:abc", []byte(`["second"]`)), "a repeated key is no error")
	got, err := s.Call(ctx, "call0001", "search:abc")
	require.NoError(t, err)
	assert.JSONEq(t, `[{"url":"https://a.example"}]`, string(got), "the first result stays")

	_, err = s.Call(ctx, "call0002", "search:abc")
	require.ErrorIs(t, err, ErrNotFound, "calls are per run")

	require.ErrorIs(t, s.RecordCall(ctx, "none0001", "k", []byte(`1`)), ErrNotFound, "no run, no calls")
	require.ErrorIs(t, s.RecordCall(ctx, "call0001", "", []byte(`1`)), ErrInvalid)
	require.ErrorIs(t, s.RecordCall(ctx, "call0001", strings.Repeat("k", MaxCallKeyBytes+1), []byte(`1`)), ErrInvalid)
	require.ErrorIs(t, s.RecordCall(ctx, "call0001", "k", []byte(`not json`)), ErrInvalid)
	require.ErrorIs(t, s.RecordCall(ctx, "call0001", "k", nil), ErrInvalid)
	require.ErrorIs(t, s.RecordCall(ctx, "call0001", "k", bigDocument()), ErrTooLarge)

	// Delete, DeleteThread and Prune remove the calls with the run: a new
	// run with the id has none.
	removals := []func(r *Run){
		func(r *Run) { require.NoError(t, s.Delete(ctx, r.ID)) },
		func(r *Run) { require.NoError(t, s.DeleteThread(ctx, r.Thread)) },
		func(r *Run) {
			pruned, err := s.Prune(ctx, r.Started.Add(time.Second))
			require.NoError(t, err)
			assert.Contains(t, ids(pruned), r.ID)
		},
	}
	for _, remove := range removals {
		r := newRun("callgone", base())
		create(t, s, r)
		require.NoError(t, s.RecordCall(ctx, r.ID, "read:x", []byte(`{"content":"page"}`)))
		remove(r)
		create(t, s, r)
		_, err := s.Call(ctx, r.ID, "read:x")
		require.ErrorIs(t, err, ErrNotFound)
		require.NoError(t, s.Delete(ctx, r.ID))
	}
}

// testClaim: of processes claiming a run they all read, exactly one wins;
// the others get ErrClaimed and the run is the winner's.
func testClaim(t *testing.T, s Store) {
	ctx := t.Context()
	r := newRun("clai0001", base())
	r.Status, r.Host, r.PID = StatusInterrupted, "old-host", 7
	create(t, s, r)

	const claimants = 8
	seen := make([]*Run, claimants)
	for i := range seen {
		var err error
		seen[i], err = s.Get(ctx, r.ID)
		require.NoError(t, err)
	}
	errs := make([]error, claimants)
	var wg sync.WaitGroup
	for i := range claimants {
		wg.Go(func() {
			mine := *seen[i]
			mine.Status, mine.Host, mine.PID, mine.Updated = StatusRunning, "host", 1000+i, base().Add(time.Hour)
			errs[i] = s.Claim(ctx, &mine, seen[i])
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "two claims won")
			winner = i
			continue
		}
		require.ErrorIs(t, err, ErrClaimed)
		assert.Contains(t, err.Error(), "clai0001")
	}
	require.NotEqual(t, -1, winner, "no claim won")
	got, err := s.Get(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusRunning, got.Status)
	assert.Equal(t, 1000+winner, got.PID)

	// A claim of a run that is gone, or without what was read.
	gone := *got
	gone.ID = "none0001"
	require.ErrorIs(t, s.Claim(ctx, &gone, &gone), ErrNotFound)
	require.ErrorIs(t, s.Claim(ctx, got, nil), ErrInvalid)
}
