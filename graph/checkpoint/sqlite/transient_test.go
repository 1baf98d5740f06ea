package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"
	_ "github.com/ncruces/go-sqlite3/driver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph"
)

func TestTransientClassifiesErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"busy", sqlite3.BUSY, true},
		{"busy snapshot", sqlite3.BUSY_SNAPSHOT, true},
		{"locked", sqlite3.LOCKED, true},
		{"wrapped busy", fmt.Errorf("sqlite: storing: %w", sqlite3.BUSY), true},
		{"full disk", sqlite3.FULL, false},
		{"read-only", sqlite3.READONLY, false},
		{"corrupt", sqlite3.CORRUPT, false},
		{"interrupted by the context", sqlite3.INTERRUPT, false},
		{"context canceled", context.Canceled, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Transient(tc.err), "%v", tc.err)
		})
	}
}

// holdWriteLock takes the write lock of the file at path on a connection
// of its own, as another process does; release gives it back.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_pragma=busy_timeout(0)")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	conn, err := db.Conn(t.Context())
	require.NoError(t, err)
	_, err = conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`)
	require.NoError(t, err)
	return func() {
		_, err := conn.ExecContext(context.Background(), `COMMIT`)
		assert.NoError(t, err)
		_ = conn.Close()
	}
}

// The driver's own error for a database locked by another connection is
// transient.
func TestTransientRealBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	s, err := Open(t.Context(), path)
	require.NoError(t, err)
	defer s.Close()
	release := holdWriteLock(t, path)
	defer release()
	db, err := sql.Open("sqlite3", "file:"+path+"?_pragma=busy_timeout(0)")
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(t.Context(), `BEGIN IMMEDIATE`)
	require.Error(t, err)
	t.Logf("error with the write lock held elsewhere: %v", err)
	assert.True(t, Transient(err), "%v", err)
}

// A checkpoint written while another process holds the write lock past
// the busy timeout is stored once the lock is given back.
func TestPutOutlastsBusyTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	s, err := Open(t.Context(), path, WithBusyTimeout(time.Millisecond))
	require.NoError(t, err)
	defer s.Close()
	release := holdWriteLock(t, path)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cp := &graph.Checkpoint{Format: graph.CheckpointFormat, Thread: "t", ID: "1", State: []byte(`{}`), Source: graph.SourceInput, Created: time.Now()}
	done := make(chan error, 1)
	go func() { done <- s.Put(ctx, cp) }()
	// Long enough for several attempts to meet the lock (the busy timeout
	// is 1ms); nothing is measured.
	time.Sleep(200 * time.Millisecond)
	release()
	require.NoError(t, <-done)
	got, err := s.Get(ctx, graph.Ref{Thread: "t"})
	require.NoError(t, err)
	assert.Equal(t, "1", got.ID)
}
