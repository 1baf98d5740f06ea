package temporalapp

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/graph/temporalgraph"
	"github.com/deepgraph/deepgraph/internal/app"
)

func TestTemporalCodec(t *testing.T) {
	assert.Equal(t, &temporalgraph.Codec{}, Codec(app.Temporal{}), "compression only")
	assert.Equal(t, &temporalgraph.Codec{Store: temporalgraph.DirStore("/shared/blobs")}, Codec(app.Temporal{BlobDir: "/shared/blobs"}))
}

func TestDialNoServer(t *testing.T) {
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = Dial(context.Background(), app.Temporal{Address: addr, Namespace: "default", TaskQueue: "q"}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot reach Temporal at "+addr+": ")
	assert.Contains(t, err.Error(), "connection refused")
	assert.Contains(t, err.Error(), "is a Temporal server running there?")
	assert.NotContains(t, err.Error(), "rpc error")

	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stop")
	cancel(stop)
	_, err = Dial(ctx, app.Temporal{Address: addr, Namespace: "default", TaskQueue: "q"}, nil)
	assert.ErrorIs(t, err, stop, "a cancelled dial says why")
}
