package app

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// The settings of research on Temporal live here, without the Temporal
// SDK: programs that import app but never run on Temporal (research
// itself, the server) link none of the SDK, gRPC or their init. Dialing
// and the payload codec are in package temporalapp.

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
