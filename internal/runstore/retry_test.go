package runstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph/checkpoint/checkpointtest"
)

// errReplyLost is the error of a commit that took effect but whose reply
// was lost, as when the connection is cut at that moment.
var errReplyLost = errors.New("connection reset after the commit")

// lostReplies is a sqlDB whose next writes (lose of them) commit and then
// fail with errReplyLost.
type lostReplies struct {
	sqlDB
	lose *atomic.Int32
}

func (d lostReplies) lost(err error) error {
	if err == nil && d.lose.Add(-1) >= 0 {
		return errReplyLost
	}
	return err
}

func (d lostReplies) tx(ctx context.Context, fn func(sqlConn) error) error {
	return d.lost(d.sqlDB.tx(ctx, fn))
}

func (d lostReplies) exec(ctx context.Context, query string, args ...any) (int64, error) {
	n, err := d.sqlDB.exec(ctx, query, args...)
	return n, d.lost(err)
}

// Every write of the run store, run again after a commit whose reply was
// lost, succeeds and stores what it stores once.
func TestWritesIdempotentWhenCommitReplyLost(t *testing.T) {
	ctx := t.Context()
	db := openSQLiteDB(t, filepath.Join(t.TempDir(), "runs.db"))
	opened, err := OpenSQLite(ctx, db)
	require.NoError(t, err)
	s := opened.(*sqlStore)
	lose := new(atomic.Int32)
	s.db = retryDB{lostReplies{s.db.(retryDB).sqlDB, lose}, func(err error) bool { return errors.Is(err, errReplyLost) }}
	once := func() { lose.Store(1) }

	once()
	require.NoError(t, s.CreateThread(ctx, &Thread{ID: "th-lost1", Kind: KindResearch, Title: "t", Created: base()}))
	once()
	r := newRun("lost0001", base())
	r.Thread = "th-lost1"
	r.Status, r.Host, r.PID = StatusInterrupted, "old-host", 7
	require.NoError(t, s.Create(ctx, r))
	once()
	require.NoError(t, s.SetThreadData(ctx, "th-lost1", []byte(`{"n":1}`)))
	once()
	require.NoError(t, s.RecordCall(ctx, r.ID, "search:q", []byte(`{"hits":1}`)))
	seen, err := s.Get(ctx, r.ID)
	require.NoError(t, err)
	mine := *seen
	mine.Status, mine.Host, mine.PID, mine.Updated = StatusRunning, "host", 1000, base().Add(time.Hour)
	once()
	require.NoError(t, s.Claim(ctx, &mine, seen))
	mine.Tokens = 42
	once()
	require.NoError(t, s.Update(ctx, &mine))
	assert.Equal(t, int32(-1), lose.Load(), "the last write lost its reply too")

	got, err := s.Get(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusRunning, got.Status)
	assert.Equal(t, int64(42), got.Tokens)
	th, err := s.GetThread(ctx, "th-lost1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"n":1}`, string(th.Data))
	call, err := s.Call(ctx, r.ID, "search:q")
	require.NoError(t, err)
	assert.JSONEq(t, `{"hits":1}`, string(call))

	// A real conflict is still one.
	assert.ErrorIs(t, s.Create(ctx, r), ErrExists)
	assert.ErrorIs(t, s.CreateThread(ctx, &Thread{ID: "th-lost1", Kind: KindResearch, Title: "t", Created: base()}), ErrExists)
	assert.ErrorIs(t, s.SetThreadData(ctx, "th-none", []byte(`{}`)), ErrNotFound)
	other := *seen
	other.PID = 2000
	assert.ErrorIs(t, s.Claim(ctx, &other, seen), ErrClaimed)

	once()
	require.NoError(t, s.Delete(ctx, r.ID))
	_, err = s.Get(ctx, r.ID)
	assert.ErrorIs(t, err, ErrNotFound)
	once()
	require.NoError(t, s.DeleteThread(ctx, "th-lost1"))
	assert.ErrorIs(t, s.DeleteThread(ctx, "th-lost1"), ErrNotFound)
}

// A sequence of run-store writes on PostgreSQL whose connections are all
// cut before each write, and refused for a second after, as in a restart
// of the server, loses nothing.
func TestPostgresWritesSurviveConnectionCut(t *testing.T) {
	dsn := postgresDSN(t)
	direct, schema := newPostgresPool(t)
	u, err := url.Parse(dsn)
	require.NoError(t, err, "this test needs DEEPGRAPH_TEST_POSTGRES as a URL")
	host := u.Host
	if !strings.Contains(host, ":") {
		host += ":5432"
	}
	proxy := checkpointtest.NewProxy(t, host)
	u.Host = proxy.Addr()
	cfg, err := pgxpool.ParseConfig(u.String())
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	defer pool.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	s, err := OpenPostgres(ctx, pool)
	require.NoError(t, err)

	cut := func() { proxy.Cut(time.Second) }
	r := newRun("cutr0001", base())
	r.Status = StatusRunning
	cut()
	require.NoError(t, s.Create(ctx, r))
	for i := range 3 {
		cut()
		require.NoError(t, s.RecordCall(ctx, r.ID, fmt.Sprintf("read:%d", i), []byte(`{}`)))
	}
	cut()
	require.NoError(t, s.RecordCall(ctx, r.ID, "search:q", []byte(`{"hits":3}`)))
	r.Status, r.Tokens = StatusDone, 99
	cut()
	require.NoError(t, s.Update(ctx, r))
	assert.Equal(t, 6, proxy.Cuts())

	// Read back on a connection the proxy never carried.
	d, err := OpenPostgres(ctx, direct)
	require.NoError(t, err)
	got, err := d.Get(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusDone, got.Status)
	assert.Equal(t, int64(99), got.Tokens)
	for i := range 3 {
		_, err := d.Call(ctx, r.ID, fmt.Sprintf("read:%d", i))
		require.NoError(t, err)
	}
	call, err := d.Call(ctx, r.ID, "search:q")
	require.NoError(t, err)
	assert.JSONEq(t, `{"hits":3}`, string(call))
}
