package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/checkpoint/checkpointtest"
)

func TestTransientClassifiesErrors(t *testing.T) {
	opErr := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"admin shutdown 57P01", &pgconn.PgError{Code: "57P01", Severity: "FATAL"}, true},
		{"crash shutdown 57P02", &pgconn.PgError{Code: "57P02"}, true},
		{"starting up 57P03", &pgconn.PgError{Code: "57P03"}, true},
		{"serialization failure 40001", &pgconn.PgError{Code: "40001"}, true},
		{"deadlock 40P01", &pgconn.PgError{Code: "40P01"}, true},
		{"connection failure 08006", &pgconn.PgError{Code: "08006"}, true},
		{"wrapped 57P01", fmt.Errorf("postgres: storing checkpoint: %w", &pgconn.PgError{Code: "57P01"}), true},
		{"connection reset", fmt.Errorf("failed to receive message: %w", opErr), true},
		{"unexpected EOF", fmt.Errorf("receive: %w", io.ErrUnexpectedEOF), true},
		{"conn closed", pgconn.ErrConnClosed, true},
		{"unique violation 23505", &pgconn.PgError{Code: "23505"}, false},
		{"syntax error 42601", &pgconn.PgError{Code: "42601"}, false},
		{"undefined table 42P01", &pgconn.PgError{Code: "42P01"}, false},
		{"context canceled", context.Canceled, false},
		{"deadline over a reset", fmt.Errorf("%w: %w", context.DeadlineExceeded, opErr), false},
		{"no rows", pgx.ErrNoRows, false},
		{"conflict", &graph.ConflictingCheckpointError{Thread: "t"}, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Transient(tc.err), "%v", tc.err)
		})
	}
}

// A session ended by pg_terminate_backend gets the error a restart gives
// (57P01, or the connection's end), which Transient retries.
func TestTransientRealAdminShutdown(t *testing.T) {
	dsn := testDSN(t)
	ctx := t.Context()
	app := fmt.Sprintf("dgtest-terminate-%d", time.Now().UnixNano())
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	cfg.RuntimeParams["application_name"] = app
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	require.NoError(t, conn.Ping(ctx))
	sqlExec(t, dsn, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app)
	_, err = conn.Exec(ctx, `SELECT 1`)
	require.Error(t, err)
	t.Logf("error after pg_terminate_backend: %v", err)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		assert.Equal(t, "57P01", pgErr.Code)
	}
	assert.True(t, Transient(err), "%v", err)
}

// A real serialization failure (40001) of two serializable transactions.
func TestTransientRealSerializationFailure(t *testing.T) {
	dsn := testDSN(t)
	ctx := t.Context()
	schema := freshSchema(t, dsn)
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	defer pool.Close()
	table := pgx.Identifier{schema, "n"}.Sanitize()
	_, err = pool.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()+`; CREATE TABLE `+table+` (k int PRIMARY KEY, v int); INSERT INTO `+table+` VALUES (1, 0), (2, 0)`)
	require.NoError(t, err)
	ser := pgx.TxOptions{IsoLevel: pgx.Serializable}
	a, err := pool.BeginTx(ctx, ser)
	require.NoError(t, err)
	defer func() { _ = a.Rollback(ctx) }()
	b, err := pool.BeginTx(ctx, ser)
	require.NoError(t, err)
	defer func() { _ = b.Rollback(ctx) }()
	// Write skew: each reads what the other writes.
	_, err = a.Exec(ctx, `UPDATE `+table+` SET v = (SELECT sum(v) FROM `+table+`) + 1 WHERE k = 1`)
	require.NoError(t, err)
	_, err = b.Exec(ctx, `UPDATE `+table+` SET v = (SELECT sum(v) FROM `+table+`) + 1 WHERE k = 2`)
	require.NoError(t, err)
	require.NoError(t, a.Commit(ctx))
	err = b.Commit(ctx)
	require.Error(t, err)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	assert.Equal(t, "40001", pgErr.Code)
	assert.True(t, Transient(err))
}

// proxied returns dsn with its host replaced by a proxy to it.
func proxied(t *testing.T, dsn string) (string, *checkpointtest.Proxy) {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err, "this test needs %s as a URL", envDSN)
	host := u.Host
	if !strings.Contains(host, ":") {
		host += ":5432"
	}
	p := checkpointtest.NewProxy(t, host)
	u.Host = p.Addr()
	return u.String(), p
}

// A graph run whose connections are all cut mid-run, and refused for a
// while after, as in a restart of the server, finishes with every step
// stored.
func TestRunSurvivesConnectionCut(t *testing.T) {
	dsn := testDSN(t)
	schema := freshSchema(t, dsn)
	viaProxy, proxy := proxied(t, dsn)
	saver := openSaver(t, viaProxy, schema)

	type State struct{ Done []string }
	done := graph.Append(func(s *State) *[]string { return &s.Done })
	g := graph.New[State](done)
	steps := []string{"a", "b", "c", "d", "e", "f"}
	for _, name := range steps {
		g.AddNode(name, func(context.Context, State) (graph.Update[State], error) {
			if name == "c" {
				proxy.Cut(1500 * time.Millisecond) // the save after c meets a dead pool
			}
			return graph.Writes(done.Add(name)), nil
		})
	}
	g.AddSequence(append(append([]string{graph.Start}, steps...), graph.End)...)
	run, err := g.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := run.Invoke(ctx, State{}, graph.Thread("cut"))
	require.NoError(t, err, "the run failed on a cut connection")
	assert.Equal(t, steps, out.Done)
	assert.Equal(t, 1, proxy.Cuts())

	// Every step is stored, read back through the proxy too.
	cp, err := saver.Get(ctx, graph.Ref{Thread: "cut"})
	require.NoError(t, err)
	history, err := saver.List(ctx, graph.Ref{Thread: "cut"}, 0)
	require.NoError(t, err)
	assert.Equal(t, history[0].ID, cp.ID)
	assert.GreaterOrEqual(t, len(history), len(steps)+1, "a checkpoint per step, and the input's")
}

// A graph run whose sessions are all ended by the server mid-run
// (pg_terminate_backend: SQLSTATE 57P01, what a restart's shutdown sends)
// finishes with every step stored.
func TestRunSurvivesAdminShutdown(t *testing.T) {
	dsn := testDSN(t)
	schema := freshSchema(t, dsn)
	u, err := url.Parse(dsn)
	require.NoError(t, err, "this test needs %s as a URL", envDSN)
	app := fmt.Sprintf("dgtest-shutdown-%d", time.Now().UnixNano())
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	saver := openSaver(t, u.String(), schema)

	type State struct{ Done []string }
	done := graph.Append(func(s *State) *[]string { return &s.Done })
	g := graph.New[State](done)
	steps := []string{"a", "b", "c", "d"}
	for _, name := range steps {
		g.AddNode(name, func(ctx context.Context, _ State) (graph.Update[State], error) {
			if name == "b" || name == "c" {
				sqlExec(t, dsn, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app)
			}
			return graph.Writes(done.Add(name)), nil
		})
	}
	g.AddSequence(append(append([]string{graph.Start}, steps...), graph.End)...)
	run, err := g.Compile(graph.WithCheckpointer(saver))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := run.Invoke(ctx, State{}, graph.Thread("shutdown"))
	require.NoError(t, err, "the run failed on a terminated session")
	assert.Equal(t, steps, out.Done)
	history, err := saver.List(ctx, graph.Ref{Thread: "shutdown"}, 0)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(history), len(steps)+1)
}

// Open waits out a server that is restarting: its table setup meets
// refused connections for a second, and succeeds once they are accepted.
func TestOpenSurvivesARestart(t *testing.T) {
	dsn := testDSN(t)
	schema := freshSchema(t, dsn)
	viaProxy, proxy := proxied(t, dsn)
	proxy.Cut(time.Second) // every connection refused for a second
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := Open(ctx, viaProxy, WithSchema(schema))
	require.NoError(t, err, "the setup was not retried")
	t.Cleanup(s.Close)
	_, err = s.Get(ctx, graph.Ref{Thread: "none"})
	assert.ErrorIs(t, err, graph.ErrCheckpointNotFound, "the tables are there")
	assert.Equal(t, 1, proxy.Cuts())
}
