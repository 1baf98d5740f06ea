package app

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph/temporalgraph"
)

func TestTemporalCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	ok := Temporal{Address: "localhost:7233", Namespace: DefaultTemporalNamespace, TaskQueue: DefaultTemporalTaskQueue}
	require.NoError(t, ok.Check())
	withDir := ok
	withDir.BlobDir = dir
	require.NoError(t, withDir.Check())
	for _, tc := range []struct {
		edit func(*Temporal)
		want string
	}{
		{func(t *Temporal) { t.Address = "localhost" }, `--temporal "localhost" is not HOST:PORT`},
		{func(t *Temporal) { t.Address = ":7233" }, `--temporal ":7233" is not HOST:PORT`},
		{func(t *Temporal) { t.Address = "localhost:http" }, "the port must be a number from 1 to 65535"},
		{func(t *Temporal) { t.Address = "localhost:70000" }, "the port must be a number from 1 to 65535"},
		{func(t *Temporal) { t.Namespace = " " }, "--namespace is empty"},
		{func(t *Temporal) { t.TaskQueue = "" }, "--task-queue is empty"},
		{func(t *Temporal) { t.BlobDir = filepath.Join(dir, "missing") }, "no such file or directory (create it, on a disk that every worker and client shares)"},
		{func(t *Temporal) { t.BlobDir = file }, "is not a directory"},
	} {
		bad := ok
		tc.edit(&bad)
		err := bad.Check()
		require.Error(t, err, "%+v", bad)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestTemporalCodec(t *testing.T) {
	assert.Equal(t, &temporalgraph.Codec{}, Temporal{}.Codec(), "compression only")
	assert.Equal(t, &temporalgraph.Codec{Store: temporalgraph.DirStore("/shared/blobs")}, Temporal{BlobDir: "/shared/blobs"}.Codec())
}

func TestDialTemporalNoServer(t *testing.T) {
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = DialTemporal(context.Background(), Temporal{Address: addr, Namespace: "default", TaskQueue: "q"}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot reach Temporal at "+addr+": ")
	assert.Contains(t, err.Error(), "connection refused")
	assert.Contains(t, err.Error(), "is a Temporal server running there?")
	assert.NotContains(t, err.Error(), "rpc error")

	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stop")
	cancel(stop)
	_, err = DialTemporal(ctx, Temporal{Address: addr, Namespace: "default", TaskQueue: "q"}, nil)
	assert.ErrorIs(t, err, stop, "a cancelled dial says why")
}
