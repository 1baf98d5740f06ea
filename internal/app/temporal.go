package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/deepgraph/deepgraph/graph/temporalgraph"
)

// Defaults of the Temporal settings (research worker, research --temporal,
// research batch).
const (
	DefaultTemporalNamespace = "default"
	DefaultTemporalTaskQueue = "deepgraph-research"
)

// Temporal says where research runs on Temporal: the server's frontend,
// the namespace and task queue that workers and clients share, and the
// directory of large payloads every one of them mounts (BlobDir; without
// it, large payloads are only compressed).
type Temporal struct {
	Address   string
	Namespace string
	TaskQueue string
	BlobDir   string
}

// Check says what is wrong with the settings, naming the flag to change.
func (t Temporal) Check() error {
	host, port, err := net.SplitHostPort(t.Address)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("--temporal %q is not HOST:PORT (the Temporal frontend's gRPC address, e.g. localhost:7233)", t.Address)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("--temporal %q: the port must be a number from 1 to 65535", t.Address)
	}
	if strings.TrimSpace(t.Namespace) == "" {
		return errors.New("--namespace is empty: name a Temporal namespace (default " + DefaultTemporalNamespace + ")")
	}
	if strings.TrimSpace(t.TaskQueue) == "" {
		return errors.New("--task-queue is empty: name the task queue the workers poll (default " + DefaultTemporalTaskQueue + ")")
	}
	if t.BlobDir != "" {
		fi, err := os.Stat(t.BlobDir)
		switch {
		case err != nil:
			return fmt.Errorf("--blob-dir %s: %w (create it, on a disk that every worker and client shares)", t.BlobDir, errors.Unwrap(err))
		case !fi.IsDir():
			return fmt.Errorf("--blob-dir %s is not a directory", t.BlobDir)
		}
	}
	return nil
}

// Codec is the payload codec of the settings: compression, and the blob
// directory when there is one. Workers and clients must agree on it.
func (t Temporal) Codec() *temporalgraph.Codec {
	c := &temporalgraph.Codec{}
	if t.BlobDir != "" {
		c.Store = temporalgraph.DirStore(t.BlobDir)
	}
	return c
}

// dialTimeout bounds connecting to the server and checking the namespace.
const dialTimeout = 10 * time.Second

// DialTemporal connects to the Temporal server with the settings' codec
// and namespace, and checks that the namespace exists. The SDK logs
// through logger (nil: nowhere). The errors name the address and what to
// do.
func DialTemporal(ctx context.Context, t Temporal, logger *slog.Logger) (client.Client, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, err := client.DialContext(dctx, client.Options{
		HostPort:      t.Address,
		Namespace:     t.Namespace,
		DataConverter: temporalgraph.DataConverter(t.Codec()),
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
	return OneLine(msg, 300)
}
