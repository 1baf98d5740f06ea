package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// envDSN names the test server.
const envDSN = "DEEPGRAPH_TEST_POSTGRES"

// testDSN returns the DSN of the test server, or skips tb when none is set.
func testDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(envDSN)
	if dsn == "" {
		tb.Skip("PostgreSQL tests skipped: set " + envDSN + "=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run them (.ci/run sets it when a server answers on 127.0.0.1:5432)")
	}
	return dsn
}

// freshSchema returns the name of a schema no one uses yet — suffix
// appended — dropped with everything in it when tb ends. Open and New create
// it.
func freshSchema(tb testing.TB, dsn string, suffix ...string) string {
	tb.Helper()
	name := fmt.Sprintf("dgtest_%016x", rand.Uint64()) + strings.Join(suffix, "")
	tb.Cleanup(func() { sqlExec(tb, dsn, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE") })
	return name
}

// sqlExec runs SQL on a pool of its own (which reads a DSN as Open does).
func sqlExec(tb testing.TB, dsn, sql string, args ...any) {
	tb.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(tb, err)
	defer pool.Close()
	_, err = pool.Exec(ctx, sql, args...)
	require.NoError(tb, err)
}

// openSaver opens a Saver on schema, closed when tb ends.
func openSaver(tb testing.TB, dsn, schema string, opts ...Option) *Saver {
	tb.Helper()
	s, err := Open(context.Background(), dsn, append([]Option{WithSchema(schema)}, opts...)...)
	require.NoError(tb, err)
	tb.Cleanup(s.Close)
	return s
}

// freshSaver opens a Saver on a fresh schema.
func freshSaver(tb testing.TB, opts ...Option) *Saver {
	tb.Helper()
	dsn := testDSN(tb)
	return openSaver(tb, dsn, freshSchema(tb, dsn), opts...)
}
