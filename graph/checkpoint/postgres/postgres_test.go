package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/checkpointtest"
	"github.com/deepgraph/deepgraph/graph/checkpoint/internal/storecodec"
	"github.com/deepgraph/deepgraph/graph/checkpoint/retry"
)

func TestConformance(t *testing.T) {
	testDSN(t)
	checkpointtest.Run(t, func(t *testing.T) graph.Checkpointer { return freshSaver(t) })
}

// TestOwnership: runs on one thread through Savers with pools of their own
// on one schema.
func TestOwnership(t *testing.T) {
	checkpointtest.Ownership(t, func(t *testing.T, n int) []graph.Checkpointer {
		out := make([]graph.Checkpointer, n)
		for i, s := range savers(t, n) {
			out[i] = s
		}
		return out
	})
}

// openLocation opens a crash test's location, "schema dsn", closed when
// the test ends.
func openLocation(t *testing.T) func(location string) (graph.Checkpointer, error) {
	return func(location string) (graph.Checkpointer, error) {
		schema, dsn, _ := strings.Cut(location, " ")
		s, err := Open(context.Background(), dsn, WithSchema(schema))
		if err != nil {
			return nil, err
		}
		t.Cleanup(s.Close)
		return s, nil
	}
}

// TestCrash kills runs with SIGKILL and resumes them in other processes; the
// children find the schema and the server in the location, "schema dsn".
func TestCrash(t *testing.T) {
	dsn := testDSN(t)
	checkpointtest.Crash(t, freshSchema(t, dsn)+" "+dsn, openLocation(t))
}

// TestCrashDurability kills runs in each durability mode with SIGKILL and
// checks what the server kept; the children find the schema and the server
// in the location, "schema dsn".
func TestCrashDurability(t *testing.T) {
	dsn := testDSN(t)
	checkpointtest.CrashDurability(t, freshSchema(t, dsn)+" "+dsn, openLocation(t))
}

func checkpoint(thread, id, parent string, step int) *graph.Checkpoint {
	return &graph.Checkpoint{Format: graph.CheckpointFormat, Thread: thread, ID: id, Parent: parent, Step: step,
		State: json.RawMessage(fmt.Sprintf(`{"step":%d}`, step)), Next: []graph.PendingTask{{Node: "work"}},
		Created: time.Now(), Source: graph.SourceLoop}
}

// savers opens n Savers, each with a pool of its own, on one fresh schema.
func savers(t *testing.T, n int) []*Saver {
	dsn := testDSN(t)
	schema := freshSchema(t, dsn)
	out := make([]*Saver, n)
	for i := range out {
		out[i] = openSaver(t, dsn, schema)
	}
	return out
}

func TestSaversRacingPuts(t *testing.T) {
	ss := savers(t, 4)
	const writersPerSaver, rounds = 6, 8
	parent := ""
	for round := range rounds {
		ids := make([]string, len(ss)*writersPerSaver)
		errs := make([]error, len(ids))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range ids {
			ids[i] = fmt.Sprintf("r%d-w%02d", round, i)
			wg.Go(func() {
				<-start
				errs[i] = ss[i%len(ss)].Put(context.Background(), checkpoint("race", ids[i], parent, round))
			})
		}
		close(start)
		wg.Wait()
		winner := ""
		for i, err := range errs {
			if err == nil {
				require.Empty(t, winner, "round %d: two writers continued checkpoint %q: %s and %s", round, parent, winner, ids[i])
				winner = ids[i]
			}
		}
		require.NotEmpty(t, winner, "round %d: no writer won", round)
		for i, err := range errs {
			if err == nil {
				continue
			}
			require.ErrorIs(t, err, graph.ErrCheckpointConflict, "round %d, writer %d", round, i)
			var ce *graph.ConflictingCheckpointError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, graph.ConflictingCheckpointError{Thread: "race", Parent: parent, Newest: winner}, *ce)
		}
		parent = winner
	}
	list, err := ss[0].List(t.Context(), graph.Thread("race"), 0)
	require.NoError(t, err)
	require.Len(t, list, rounds, "one checkpoint per round")
	for i, cp := range list {
		assert.Equal(t, rounds-1-i, cp.Step, "newest first")
		if i+1 < len(list) {
			assert.Equal(t, list[i+1].ID, cp.Parent, "each follows the one before")
		}
	}
}

func TestSaversRacingPutWrites(t *testing.T) {
	ss := savers(t, 4)
	require.NoError(t, ss[0].Put(t.Context(), checkpoint("w", "c1", "", 0)))
	const callers, calls, shared = 16, 5, 8
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for k := range calls {
				// Every call writes the shared tasks, in an order of its own,
				// and a task of its own.
				mark := fmt.Sprintf(`{"caller":%d,"call":%d}`, c, k)
				recs := []graph.TaskWrite{{Task: 100 + c*calls + k, Node: "own", Update: json.RawMessage(mark)}}
				for _, task := range rand.Perm(shared) {
					recs = append(recs, graph.TaskWrite{Task: task, Node: "shared", Update: json.RawMessage(mark)})
				}
				assert.NoError(t, ss[c%len(ss)].PutWrites(context.Background(), graph.Thread("w").At("c1"), "", recs...))
			}
		})
	}
	wg.Wait()
	cp, err := ss[0].Get(t.Context(), graph.Thread("w"))
	require.NoError(t, err)
	require.Len(t, cp.Writes, shared+callers*calls, "nothing is lost")
	for i, w := range cp.Writes[:shared] {
		assert.Equal(t, i, w.Task)
		assert.JSONEq(t, string(cp.Writes[0].Update), string(w.Update), "the shared tasks hold one call's records: a call is atomic")
	}
	for i, w := range cp.Writes[shared:] {
		assert.Equal(t, 100+i, w.Task)
		assert.JSONEq(t, fmt.Sprintf(`{"caller":%d,"call":%d}`, i/calls, i%calls), string(w.Update))
	}
}

func TestPutWrites(t *testing.T) {
	s := freshSaver(t)
	ctx := t.Context()
	require.NoError(t, s.Put(ctx, checkpoint("t", "c1", "", 0)))
	require.NoError(t, s.PutWrites(ctx, graph.Thread("t").At("c1"), ""), "no records: nothing to do")
	require.NoError(t, s.PutWrites(ctx, graph.Thread("t").At("c1"), "", graph.TaskWrite{Task: 1, Node: "a", Update: json.RawMessage(`{"v":1}`)}, graph.TaskWrite{Task: 0, Node: "b", Update: json.RawMessage(`{"v":0}`)}, graph.TaskWrite{Task: 1, Node: "a", Update: json.RawMessage(`{"v":2}`)}))
	cp, err := s.Get(ctx, graph.Thread("t").At("c1"))
	require.NoError(t, err)
	require.Len(t, cp.Writes, 2)
	assert.JSONEq(t, `{"v":2}`, string(cp.Writes[1].Update), "the last record of a task in one call is kept")

	for _, bad := range []graph.TaskWrite{{Task: -1, Node: "a"}, {Task: 2}} {
		err = s.PutWrites(ctx, graph.Thread("t").At("c1"), "", bad)
		require.Error(t, err, "%+v cannot be read back, so it is not stored", bad)
		assert.Contains(t, err.Error(), "needs a node and a task index")
	}
}

func TestMigrations(t *testing.T) {
	dsn := testDSN(t)
	ctx := t.Context()
	version := func(t *testing.T, s *Saver) int {
		var v int
		require.NoError(t, s.Pool().QueryRow(ctx, s.sql.version).Scan(&v))
		return v
	}
	t.Run("EmptySchemaIsMigrated", func(t *testing.T) {
		schema := freshSchema(t, dsn)
		sqlExec(t, dsn, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
		s := openSaver(t, dsn, schema)
		assert.Equal(t, len(migrations()), version(t, s))
		require.NoError(t, s.Put(ctx, checkpoint("t", "c1", "", 0)))
		again := openSaver(t, dsn, schema)
		assert.Equal(t, len(migrations()), version(t, again))
		_, err := again.Get(ctx, graph.Thread("t").At("c1"))
		assert.NoError(t, err, "opening again keeps what is stored")
	})
	t.Run("Version1ThreadsAreKept", func(t *testing.T) {
		schema := freshSchema(t, dsn)
		sqlExec(t, dsn, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
		sql := newStatements(schema)
		sqlExec(t, dsn, sql.qualify(migrations()[0]+"; UPDATE deepgraph_schema SET version = 1"))
		sqlExec(t, dsn, sql.qualify(`INSERT INTO deepgraph_threads (thread, newest) VALUES ('old', '')`))
		for _, row := range checkpointtest.LegacyThread("old") {
			sqlExec(t, dsn, sql.qualify(`INSERT INTO deepgraph_checkpoints (thread, id, parent, step, created, source, data) VALUES ('old', $1, $2, $3, $4, $5, $6)`),
				row.ID, row.Parent, row.Step, row.Created, row.Source, row.Doc)
			sqlExec(t, dsn, sql.qualify(`UPDATE deepgraph_threads SET newest = $1 WHERE thread = 'old'`), row.ID)
			for task, rec := range row.Records {
				sqlExec(t, dsn, sql.qualify(`INSERT INTO deepgraph_writes (thread, checkpoint, task, data) VALUES ('old', $1, $2, $3)`), row.ID, task, rec)
			}
		}
		s := openSaver(t, dsn, schema)
		assert.Equal(t, len(migrations()), version(t, s))
		checkpointtest.CheckLegacyThread(t, s, "old")
	})
	t.Run("NewerVersionIsRefused", func(t *testing.T) {
		schema := freshSchema(t, dsn)
		sqlExec(t, dsn, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
		sqlExec(t, dsn, fmt.Sprintf("CREATE TABLE %s.deepgraph_schema (version integer NOT NULL); INSERT INTO %[1]s.deepgraph_schema VALUES (99)", pgx.Identifier{schema}.Sanitize()))
		_, err := Open(ctx, dsn, WithSchema(schema))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "version 99")
		assert.Contains(t, err.Error(), "upgrade deepgraph")
	})
	t.Run("ConcurrentOpens", func(t *testing.T) {
		schema := freshSchema(t, dsn)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				s, err := Open(context.Background(), dsn, WithSchema(schema))
				if assert.NoError(t, err) {
					s.Close()
				}
			})
		}
		wg.Wait()
		assert.Equal(t, len(migrations()), version(t, openSaver(t, dsn, schema)))
	})
	t.Run("OddSchemaName", func(t *testing.T) {
		schema := freshSchema(t, dsn, `_"Odd" name; --`)
		s := openSaver(t, dsn, schema)
		require.NoError(t, s.Put(ctx, checkpoint("t", "c1", "", 0)))
		cp, err := s.Get(ctx, graph.Thread("t"))
		require.NoError(t, err)
		assert.Equal(t, "c1", cp.ID)
	})
	t.Run("SchemaNameTooLong", func(t *testing.T) {
		_, err := Open(ctx, dsn, WithSchema(strings.Repeat("s", 64)))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "longer than PostgreSQL's 63 bytes")
	})
	t.Run("SearchPath", func(t *testing.T) {
		schema := freshSchema(t, dsn)
		sqlExec(t, dsn, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		s, err := Open(ctx, dsn+sep+"search_path="+schema)
		require.NoError(t, err)
		defer s.Close()
		require.NoError(t, s.Put(ctx, checkpoint("t", "c1", "", 0)))
		var n int
		require.NoError(t, s.Pool().QueryRow(ctx, newStatements(schema).qualify("SELECT count(*) FROM deepgraph_checkpoints")).Scan(&n))
		assert.Equal(t, 1, n, "without WithSchema the tables go in the search path's schema")
	})
}

func TestCorruptRows(t *testing.T) {
	testDSN(t)
	cases := []struct {
		name, sql string // sql changes the rows of checkpoint c2 of thread "t"
		want      []string
	}{
		{"GarbageCheckpoint", `UPDATE deepgraph_checkpoints SET data = '\x0001ff' WHERE id = 'c2'`,
			[]string{`thread "t"`, "checkpoint c2", "corrupt"}},
		{"UnknownField", `UPDATE deepgraph_checkpoints SET data = convert_to('{"format":1,"thread":"t","id":"c2","evil":1}', 'UTF8') WHERE id = 'c2'`,
			[]string{`thread "t"`, "checkpoint c2", "evil"}},
		{"AnotherCheckpointsRow", `UPDATE deepgraph_checkpoints SET data = (SELECT data FROM deepgraph_checkpoints WHERE id = 'c1') WHERE id = 'c2'`,
			[]string{`thread "t"`, "checkpoint c2", "holds checkpoint c1"}},
		{"GarbageTaskRecord", `UPDATE deepgraph_writes SET data = 'not json' WHERE task = 1`,
			[]string{`thread "t"`, "task 1 of checkpoint c2", "corrupt"}},
		{"AnotherTasksRecord", `UPDATE deepgraph_writes SET data = (SELECT data FROM deepgraph_writes WHERE task = 0) WHERE task = 1`,
			[]string{`thread "t"`, "task 1 of checkpoint c2", "holds task 0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := freshSaver(t)
			ctx := t.Context()
			require.NoError(t, s.Put(ctx, checkpoint("t", "c1", "", 0)))
			require.NoError(t, s.Put(ctx, checkpoint("t", "c2", "c1", 1)))
			require.NoError(t, s.PutWrites(ctx, graph.Thread("t").At("c2"), "", graph.TaskWrite{Task: 0, Node: "work"}, graph.TaskWrite{Task: 1, Node: "work"}))
			_, err := s.Pool().Exec(ctx, s.sql.qualify(tc.sql))
			require.NoError(t, err)
			for _, id := range []string{"c2", ""} {
				_, err = s.Get(ctx, graph.Thread("t").At(id))
				require.ErrorIs(t, err, storecodec.ErrCorrupt)
				for _, want := range tc.want {
					assert.Contains(t, err.Error(), want)
				}
			}
			_, err = s.List(ctx, graph.Thread("t"), 0)
			assert.ErrorIs(t, err, storecodec.ErrCorrupt, "List reads the checkpoints and their records")
		})
	}
}

func TestOversizedRows(t *testing.T) {
	s := freshSaver(t, WithMaxBytes(1000))
	ctx := t.Context()
	big := checkpoint("t", "c1", "", 0)
	big.State = json.RawMessage(`{"text":"` + strings.Repeat("x", 2000) + `"}`)
	require.NoError(t, s.Put(ctx, big), "the limit is on reading back")
	_, err := s.Get(ctx, graph.Thread("t"))
	require.ErrorIs(t, err, graph.ErrCheckpointTooLarge)
	assert.Contains(t, err.Error(), "checkpoint c1")
	assert.Contains(t, err.Error(), "WithMaxBytes")
	_, err = s.List(ctx, graph.Thread("t"), 1)
	require.ErrorIs(t, err, graph.ErrCheckpointTooLarge)

	require.NoError(t, s.Put(ctx, checkpoint("t", "c2", "c1", 1)))
	require.NoError(t, s.PutWrites(ctx, graph.Thread("t").At("c2"), "", graph.TaskWrite{Task: 3, Node: "work", Update: big.State}))
	_, err = s.Get(ctx, graph.Thread("t").At("c2"))
	require.ErrorIs(t, err, graph.ErrCheckpointTooLarge)
	assert.Contains(t, err.Error(), "task 3 of checkpoint c2")
}

func TestErrorsHideThePassword(t *testing.T) {
	const password = "s3cret-Pa55word"
	dsns := map[string]string{
		"Unreachable":         "postgres://deepgraph:" + password + "@127.0.0.1:1/test?sslmode=disable&connect_timeout=5",
		"UnreachableKeyValue": "host=127.0.0.1 port=1 user=deepgraph password=" + password + " dbname=test sslmode=disable connect_timeout=5",
		"BadPort":             "postgres://deepgraph:" + password + "@127.0.0.1:port/test",
		"BadKeyValue":         "host=127.0.0.1 password=" + password + " port=none",
		"BadOption":           "postgres://deepgraph:" + password + "@127.0.0.1/test?sslmode=sometimes",
	}
	for name, dsn := range dsns {
		t.Run(name, func(t *testing.T) {
			// Refused connections are retried as a restarting server's
			// are; a short policy keeps the test short.
			s, err := Open(t.Context(), dsn, WithRetry(retry.Policy{Budget: 200 * time.Millisecond}))
			require.Error(t, err)
			assert.Nil(t, s)
			assert.NotContains(t, err.Error(), password)
			assert.Contains(t, err.Error(), "postgres:")
		})
	}
}

func TestContextIsHonoured(t *testing.T) {
	s := freshSaver(t)
	ctx := t.Context()
	require.NoError(t, s.Put(ctx, checkpoint("t", "c1", "", 0)))

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, s.Put(canceled, checkpoint("t", "c2", "c1", 1)), context.Canceled)
	assert.ErrorIs(t, s.PutWrites(canceled, graph.Thread("t").At("c1"), "", graph.TaskWrite{Task: 0, Node: "work"}), context.Canceled)
	_, err := s.Get(canceled, graph.Thread("t"))
	assert.ErrorIs(t, err, context.Canceled)
	_, err = s.List(canceled, graph.Thread("t"), 0)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, s.DeleteThread(canceled, "t"), context.Canceled)

	// A Put waiting for the thread's lock gives up at its deadline: the
	// lock is held until the Rollback below, so only the deadline ends it.
	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, s.sql.lockThread, "t")
	require.NoError(t, err)
	short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	assert.ErrorIs(t, s.Put(short, checkpoint("t", "c2", "c1", 1)), context.DeadlineExceeded)
	require.NoError(t, tx.Rollback(ctx))

	cp, err := s.Get(ctx, graph.Thread("t"))
	require.NoError(t, err)
	assert.Equal(t, "c1", cp.ID, "a canceled Put stores nothing")
	assert.Empty(t, cp.Writes)
}

func TestPools(t *testing.T) {
	dsn := testDSN(t)
	schema := freshSchema(t, dsn)
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	defer pool.Close()
	s, err := New(ctx, pool, WithSchema(schema))
	require.NoError(t, err)
	assert.Same(t, pool, s.Pool())
	s.Close()
	assert.NoError(t, pool.Ping(ctx), "Close leaves the caller's pool open")

	own, err := Open(ctx, dsn, WithSchema(schema))
	require.NoError(t, err)
	own.Close()
	assert.Error(t, own.Pool().Ping(ctx), "Close closes the pool Open made")
}

func TestQueriesUseIndexes(t *testing.T) {
	s := freshSaver(t)
	ctx := t.Context()
	_, err := s.Pool().Exec(ctx, s.sql.qualify(`
		INSERT INTO deepgraph_threads SELECT 't' || i, 'c2' FROM generate_series(1, 1000) i;
		INSERT INTO deepgraph_checkpoints (thread, id, parent, step, created, source, data)
			SELECT 't' || i, 'c' || j, '', j, now(), 'loop', '\x00' FROM generate_series(1, 1000) i, generate_series(1, 20) j;
		INSERT INTO deepgraph_writes SELECT 't' || i, 'c' || j, k, '\x00' FROM generate_series(1, 1000) i, generate_series(1, 20) j, generate_series(0, 3) k;
		UPDATE deepgraph_checkpoints SET channels = '{a,b}', versions = ARRAY['c1', id];
		INSERT INTO deepgraph_blobs SELECT 't' || i, ch, 'c' || j, '', '\x00' FROM generate_series(1, 1000) i, generate_series(1, 20) j, unnest('{a,b}'::text[]) ch;
		ANALYZE`))
	require.NoError(t, err)
	plans := map[string]struct{ sql, args string }{
		"GetNewest": {s.sql.getNewest, "'t42', '', '', 1000"},
		"GetByID":   {s.sql.getByID, "'t42', '', 'c1', 1000"},
		"List":      {s.sql.list, "'t42', '', 9223372036854775807, NULL, 1000"},
		"ListLimit": {s.sql.list, "'t42', '', 9223372036854775807, 1, 1000"},
	}
	conn, err := s.Pool().Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	// The plan for these values, and the generic one a prepared statement
	// may switch to: index lookups only, no row read and filtered out.
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		for name, q := range plans {
			t.Run(name+"/"+mode, func(t *testing.T) {
				_, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode+"; PREPARE q AS "+q.sql)
				require.NoError(t, err)
				defer func() { _, _ = conn.Exec(ctx, "DEALLOCATE q; RESET plan_cache_mode") }()
				rows, err := conn.Query(ctx, "EXPLAIN EXECUTE q("+q.args+")")
				require.NoError(t, err)
				lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
				require.NoError(t, err)
				plan := strings.Join(lines, "\n")
				assert.NotContains(t, plan, "Seq Scan", plan)
				if name != "List" {
					// Listing a whole thread may read its rows and sort
					// them, filtering out other namespaces: the thread's
					// rows only.
					assert.NotContains(t, strings.ReplaceAll(plan, "One-Time Filter", ""), "Filter", plan)
				}
				assert.Contains(t, plan, "Index", plan)
			})
		}
	}
}

// TestTakeThreadWhileHolderLeaves: a run asks for a thread at the moment its
// holder gives it back. TakeThread either refuses (the holder still had it
// when it looked) or takes the thread — it never reports the thread taken
// while nobody holds it, which let such a run write its input to a thread
// that another run then took (TestOwnership/LosersWriteNothing).
func TestTakeThreadWhileHolderLeaves(t *testing.T) {
	ss := savers(t, 2)
	holder, taker := ss[0], ss[1]
	ctx := t.Context()
	_, err := holder.TakeThread(ctx, "t", "holder", time.Minute)
	require.NoError(t, err)
	taker.beforeLeaseRead = func() {
		require.NoError(t, holder.ReleaseThread(ctx, "t", "holder"))
	}
	l, err := taker.TakeThread(ctx, "t", "taker", time.Minute)
	if err != nil {
		require.ErrorIs(t, err, graph.ErrThreadBusy)
		return
	}
	assert.Equal(t, "taker", l.Run)
	// The lease is the taker's: a write of another run is refused.
	err = holder.Put(ctx, checkpoint("t", "by-another", "", 0))
	require.ErrorIs(t, err, graph.ErrThreadBusy, "TakeThread said run taker holds the thread; a write of another run must be refused")
}
