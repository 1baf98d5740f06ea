// Package temporalapp is the Temporal half of the wiring in package app:
// connecting to the server (Dial) and the payload codec workers and
// clients share (Codec), for the settings app.Temporal holds. It is apart
// from app because the Temporal SDK brings gRPC along, whose init and
// reflection keep the linker from dropping unused methods: only the
// program that runs research on Temporal (research-temporal) imports it.
package temporalapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/deepgraph/deepgraph/graph/temporalgraph"
	"github.com/deepgraph/deepgraph/internal/app"
)

// Codec is the payload codec of the settings: compression, and the blob
// directory when there is one. Workers and clients must agree on it.
func Codec(t app.Temporal) *temporalgraph.Codec {
	c := &temporalgraph.Codec{}
	if t.BlobDir != "" {
		c.Store = temporalgraph.DirStore(t.BlobDir)
	}
	return c
}

// dialTimeout bounds connecting to the server and checking the namespace.
const dialTimeout = 10 * time.Second

// Dial connects to the Temporal server with the settings' codec
// and namespace, and checks that the namespace exists. The SDK logs
// through logger (nil: nowhere). The errors name the address and what to
// do.
func Dial(ctx context.Context, t app.Temporal, logger *slog.Logger) (client.Client, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, err := client.DialContext(dctx, client.Options{
		HostPort:      t.Address,
		Namespace:     t.Namespace,
		DataConverter: temporalgraph.DataConverter(Codec(t)),
		Logger:        tlog.NewStructuredLogger(logger),
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("cannot reach Temporal at %s: %s: is a Temporal server running there? Start one (temporal server start-dev) or pass its frontend address with --temporal HOST:PORT",
			t.Address, temporalCause(err))
	}
	_, err = c.WorkflowService().DescribeNamespace(dctx, &workflowservice.DescribeNamespaceRequest{Namespace: t.Namespace})
	if err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		var nf *serviceerror.NamespaceNotFound
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("Temporal at %s has no namespace %q: create it (temporal operator namespace create %s) or name another with --namespace",
				t.Address, t.Namespace, t.Namespace)
		}
		return nil, fmt.Errorf("Temporal at %s: checking namespace %q: %s", t.Address, t.Namespace, temporalCause(err))
	}
	return c, nil
}

// temporalCause shortens a gRPC error for a message: its status message,
// not the "rpc error: code = … desc = …" wrapping.
func temporalCause(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "desc = "); i >= 0 {
		msg = msg[i+len("desc = "):]
	}
	msg = strings.Trim(msg, `"`)
	msg = strings.TrimPrefix(msg, "transport: Error while dialing: ")
	return app.OneLine(msg, 300)
}
