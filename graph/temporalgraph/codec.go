package temporalgraph

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/deepgraph/deepgraph/internal/atomicfile"
)

// Temporal refuses a payload over 2 MB, warns over 512 KB, and a workflow
// task's commands — every activity a step schedules, with its state —
// travel in one gRPC message of at most 4 MB. A research run's state
// grows with every page summary it keeps, so states reach those sizes.
// Codec keeps payloads small: it compresses the large ones, and moves
// those still large into a BlobStore, leaving a reference in the history.

// Default thresholds of a Codec.
const (
	DefaultCompressAbove = 4 << 10
	DefaultOffloadAbove  = 128 << 10
)

// Payload encodings a Codec writes.
const (
	encodingDeflate = "binary/deepgraph-deflate"
	encodingBlob    = "binary/deepgraph-blob"
)

// Codec is a converter.PayloadCodec for large graph states: a payload over
// CompressAbove bytes is compressed (DEFLATE), and one still over
// OffloadAbove is stored in Store under its SHA-256 and replaced by that
// reference. The same state sent to every task of a step is compressed and
// stored once. Workers and clients must use the same settings
// (DataConverter), and every one of them must reach the Store. A Codec is
// safe for concurrent use; do not copy one after first use.
type Codec struct {
	// Store keeps offloaded payloads. Without one, a payload that stays
	// over OffloadAbove once compressed fails with an error naming the
	// remedy.
	Store BlobStore
	// CompressAbove and OffloadAbove are the thresholds in bytes; zero
	// means DefaultCompressAbove and DefaultOffloadAbove.
	CompressAbove, OffloadAbove int
	// Timeout bounds one Store call (default 30s).
	Timeout time.Duration

	// recent are the last large payloads encoded: a step sends the same
	// state to each of its tasks, and it is compressed and stored once.
	mu     sync.Mutex
	recent []encoded
}

type encoded struct {
	sum [sha256.Size]byte
	p   *commonpb.Payload
}

// recentPayloads is how many encoded payloads a Codec remembers.
const recentPayloads = 8

func (c *Codec) lookup(sum [sha256.Size]byte) *commonpb.Payload {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.recent {
		if e.sum == sum {
			return e.p
		}
	}
	return nil
}

func (c *Codec) remember(sum [sha256.Size]byte, p *commonpb.Payload) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.recent) == recentPayloads {
		c.recent = append(c.recent[:0], c.recent[1:]...)
	}
	c.recent = append(c.recent, encoded{sum, p})
}

// BlobStore keeps offloaded payloads by key. Put must be idempotent: the
// same key always comes with the same bytes.
type BlobStore interface {
	Put(ctx context.Context, key string, data []byte) error
	Get(ctx context.Context, key string) ([]byte, error)
}

// DataConverter is the default data converter with c as its codec: give it
// to client.Options.DataConverter on workers and clients alike.
func DataConverter(c *Codec) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

func (c *Codec) limits() (compress, offload int, timeout time.Duration) {
	compress, offload, timeout = c.CompressAbove, c.OffloadAbove, c.Timeout
	if compress <= 0 {
		compress = DefaultCompressAbove
	}
	if offload <= 0 {
		offload = DefaultOffloadAbove
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return compress, offload, timeout
}

// Encode compresses and offloads payloads over the thresholds.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	compress, offload, timeout := c.limits()
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		size := proto.Size(p)
		if size <= compress {
			out[i] = p
			continue
		}
		raw, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("temporalgraph: encoding a payload: %w", err)
		}
		rawSum := sha256.Sum256(raw)
		if done := c.lookup(rawSum); done != nil {
			out[i] = done
			continue
		}
		var buf bytes.Buffer
		w, _ := flate.NewWriter(&buf, flate.BestSpeed)
		w.Write(raw)
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("temporalgraph: compressing a payload: %w", err)
		}
		if buf.Len() >= size {
			out[i] = p // incompressible
			continue
		}
		if buf.Len() <= offload {
			out[i] = &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encodingDeflate)}, Data: buf.Bytes()}
			c.remember(rawSum, out[i])
			continue
		}
		if c.Store == nil {
			return nil, fmt.Errorf("temporalgraph: a payload is %d bytes compressed (%d raw), over the %d bytes that go into Temporal's history: give the Codec a BlobStore (for example temporalgraph.DirStore on a disk every worker and client shares)",
				buf.Len(), size, offload)
		}
		sum := sha256.Sum256(buf.Bytes())
		key := hex.EncodeToString(sum[:])
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err = c.Store.Put(ctx, key, buf.Bytes())
		cancel()
		if err != nil {
			return nil, fmt.Errorf("temporalgraph: storing a %d-byte payload as blob %s: %w", buf.Len(), key, err)
		}
		out[i] = &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encodingBlob)}, Data: []byte(key)}
		c.remember(rawSum, out[i])
	}
	return out, nil
}

// Decode reverses Encode; payloads it did not write pass through.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	_, _, timeout := c.limits()
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		var packed []byte
		switch string(p.Metadata[converter.MetadataEncoding]) {
		case encodingDeflate:
			packed = p.Data
		case encodingBlob:
			key := string(p.Data)
			if c.Store == nil {
				return nil, fmt.Errorf("temporalgraph: a payload is in blob %s, and this Codec has no BlobStore: give it the store the workers use", key)
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			data, err := c.Store.Get(ctx, key)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("temporalgraph: reading blob %s: %w", key, err)
			}
			if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != key {
				return nil, fmt.Errorf("temporalgraph: blob %s does not hold what was stored under it (its SHA-256 differs)", key)
			}
			packed = data
		default:
			out[i] = p
			continue
		}
		raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(packed)))
		if err != nil {
			return nil, fmt.Errorf("temporalgraph: decompressing a payload: %w", err)
		}
		var orig commonpb.Payload
		if err := proto.Unmarshal(raw, &orig); err != nil {
			return nil, fmt.Errorf("temporalgraph: decoding a payload: %w", err)
		}
		out[i] = &orig
	}
	return out, nil
}

// DirStore is a BlobStore in a directory: local for a single machine, or on
// a file system that every worker and client mounts. Blobs are written
// once, atomically; nothing removes them, so prune files older than the
// namespace's retention period.
type DirStore string

func (d DirStore) path(key string) (string, error) {
	if len(key) != 64 || strings.Trim(key, "0123456789abcdef") != "" {
		return "", fmt.Errorf("temporalgraph: %q is not a blob key", key)
	}
	return filepath.Join(string(d), key[:2], key), nil
}

// Put writes data under key, unless it is there already.
func (d DirStore) Put(_ context.Context, key string, data []byte) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(p, data, 0o600)
}

// Get reads the blob under key.
func (d DirStore) Get(_ context.Context, key string) ([]byte, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob %s is not in %s: do the workers and this process share the blob directory?", key, string(d))
	}
	return data, err
}
