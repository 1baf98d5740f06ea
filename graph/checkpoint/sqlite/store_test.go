package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/internal/storecodec"
	"github.com/deepgraph/deepgraph/graph/checkpoint/retry"
)

// TestCorruptRows: a stored document that cannot be read back is reported
// with the thread, checkpoint and task it belongs to.
func TestCorruptRows(t *testing.T) {
	cases := []struct {
		name   string
		update string
		want   []string
	}{
		{"checkpoint not JSON", `UPDATE deepgraph_checkpoints SET data = CAST('{"format":1,' AS BLOB) WHERE id = 'c2'`,
			[]string{`thread "t"`, "checkpoint c2", "corrupt"}},
		{"checkpoint of another thread", `UPDATE deepgraph_checkpoints SET data = (SELECT data FROM deepgraph_checkpoints WHERE thread = 'u') WHERE id = 'c2'`,
			[]string{`thread "t"`, "checkpoint c2", `it holds checkpoint c1 of thread "u"`}},
		{"unknown field", `UPDATE deepgraph_checkpoints SET data = CAST(replace(CAST(data AS TEXT), '"step"', '"evil":1,"step"') AS BLOB) WHERE id = 'c2'`,
			[]string{"checkpoint c2", "evil"}},
		{"record not JSON", `UPDATE deepgraph_writes SET data = x'00ff' WHERE task = 1`,
			[]string{`thread "t"`, "checkpoint c2", "task 1", "corrupt"}},
		{"record of another task", `UPDATE deepgraph_writes SET data = (SELECT data FROM deepgraph_writes WHERE task = 0) WHERE task = 1`,
			[]string{"checkpoint c2", "the record of task 1", "it holds the record of task 0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			ctx := t.Context()
			require.NoError(t, s.Put(ctx, checkpoint("t", "c1", "", 0)))
			require.NoError(t, s.Put(ctx, checkpoint("t", "c2", "c1", 1)))
			require.NoError(t, s.Put(ctx, checkpoint("u", "c1", "", 0)))
			require.NoError(t, s.PutWrites(ctx, graph.Thread("t").At("c2"), "", record(0), record(1)))
			_, err := s.DB().Exec(tc.update)
			require.NoError(t, err)

			for what, read := range map[string]func() error{
				"Get newest": func() error { _, err := s.Get(ctx, graph.Thread("t")); return err },
				"Get by id":  func() error { _, err := s.Get(ctx, graph.Thread("t").At("c2")); return err },
			} {
				err := read()
				require.Error(t, err, what)
				assert.ErrorIs(t, err, storecodec.ErrCorrupt, what)
				assert.Contains(t, err.Error(), s.Path(), what)
				for _, want := range tc.want {
					assert.Contains(t, err.Error(), want, what)
				}
			}
			_, err = s.Get(ctx, graph.Thread("t").At("c1"))
			assert.NoError(t, err, "the other checkpoints are still read")
		})
	}
}

// TestMaxBytes: a document over the limit is neither stored nor read back.
func TestMaxBytes(t *testing.T) {
	path := t.TempDir() + "/store.db"
	big := checkpoint("t", "c1", "", 0)
	big.State = json.RawMessage(`{"text":"` + strings.Repeat("x", 2000) + `"}`)
	bigRecord := graph.TaskWrite{Task: 3, Node: "work", Update: big.State}

	small := openAt(t, path, WithMaxBytes(1000))
	err := small.Put(t.Context(), big)
	require.ErrorIs(t, err, graph.ErrCheckpointTooLarge)
	assert.Contains(t, err.Error(), "over the limit of 1000")
	err = small.PutWrites(t.Context(), graph.Thread("t").At("c1"), "", bigRecord)
	require.ErrorIs(t, err, graph.ErrCheckpointTooLarge)
	assert.Contains(t, err.Error(), "task 3")

	large := openAt(t, path)
	require.NoError(t, large.Put(t.Context(), big))
	_, err = small.Get(t.Context(), graph.Thread("t"))
	require.ErrorIs(t, err, graph.ErrCheckpointTooLarge)
	assert.Contains(t, err.Error(), "checkpoint c1")
	_, err = small.List(t.Context(), graph.Thread("t"), 0)
	require.ErrorIs(t, err, graph.ErrCheckpointTooLarge)

	require.NoError(t, large.Put(t.Context(), checkpoint("t", "c2", "c1", 1)))
	require.NoError(t, large.PutWrites(t.Context(), graph.Thread("t").At("c2"), "", bigRecord))
	_, err = small.Get(t.Context(), graph.Thread("t").At("c2"))
	require.ErrorIs(t, err, graph.ErrCheckpointTooLarge)
	assert.Contains(t, err.Error(), "task 3")
}

// TestCancelled: an operation under a cancelled context fails and changes
// nothing.
func TestCancelled(t *testing.T) {
	s := openTemp(t)
	require.NoError(t, s.Put(t.Context(), checkpoint("t", "c1", "", 0)))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, s.Put(ctx, checkpoint("t", "c2", "c1", 1)), context.Canceled)
	require.ErrorIs(t, s.PutWrites(ctx, graph.Thread("t").At("c1"), "", record(0)), context.Canceled)
	require.ErrorIs(t, s.DeleteThread(ctx, "t"), context.Canceled)
	_, err := s.Get(ctx, graph.Thread("t"))
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.List(ctx, graph.Thread("t"), 0)
	require.ErrorIs(t, err, context.Canceled)

	got, err := s.Get(t.Context(), graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, "c1", got.ID)
	assert.Empty(t, got.Writes)
}

// TestQueryPlans: every statement finds its rows through an index, without
// a scan or a sort, however many threads and checkpoints there are.
func TestQueryPlans(t *testing.T) {
	s := openTemp(t)
	for _, q := range []string{sqlHeads, sqlInsertCheckpoint, sqlInsertBlob, sqlPutWrite, sqlNewest, sqlByID, sqlList, sqlSeq, sqlWrites, sqlBlob, sqlLease} {
		// As many arguments as the statement has parameters: "?" or "?N".
		args := []any{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}[:strings.Count(q, "?")]
		for n := 5; n >= 1 && strings.Contains(q, "?1"); n-- {
			if strings.Contains(q, fmt.Sprintf("?%d", n)) {
				args = args[:n]
				break
			}
		}
		rows, err := s.DB().Query("EXPLAIN QUERY PLAN "+q, args...)
		require.NoError(t, err)
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
			plan = append(plan, detail)
		}
		require.NoError(t, rows.Err())
		for _, step := range plan {
			if step != "SCAN CONSTANT ROW" {
				assert.NotContains(t, step, "SCAN", q)
			}
			assert.NotContains(t, step, "TEMP B-TREE", q)
		}
	}
}

// TestBusy: a write that waits for the lock longer than the busy timeout,
// tried again for as long as its retry policy allows, fails and says why.
func TestBusy(t *testing.T) {
	s := openTemp(t, WithBusyTimeout(50*time.Millisecond), WithRetry(retry.Policy{Budget: 200 * time.Millisecond}))
	other := openAt(t, s.Path())
	tx, err := other.DB().BeginTx(t.Context(), nil) // IMMEDIATE: holds the lock
	require.NoError(t, err)
	err = s.Put(t.Context(), checkpoint("t", "c1", "", 0))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "longer than the busy timeout (50ms")
	require.NoError(t, tx.Rollback())
	require.NoError(t, s.Put(t.Context(), checkpoint("t", "c1", "", 0)))
}
