package temporalgraph_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/proto"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/graph/internal/graphtest"
	"github.com/deepgraph/deepgraph/graph/temporalgraph"
)

// randomText is n bytes of hex from seed: text that compresses to about
// half, so that a large one stays large once compressed.
func randomText(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, (n+15)/16*8)
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return hex.EncodeToString(b)[:n]
}

func payloadOf(t *testing.T, v any) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	require.NoError(t, err)
	return p
}

func encoding(p *commonpb.Payload) string { return string(p.Metadata[converter.MetadataEncoding]) }

// blobs lists the files under dir.
func blobs(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	}))
	return files
}

// roundTrip encodes p with c, checks what the encoding is, decodes it and
// checks that it is p again; it returns the encoded payload.
func roundTrip(t *testing.T, c *temporalgraph.Codec, p *commonpb.Payload, wantEncoding string) *commonpb.Payload {
	t.Helper()
	enc, err := c.Encode([]*commonpb.Payload{p})
	require.NoError(t, err)
	require.Len(t, enc, 1)
	assert.Equal(t, wantEncoding, encoding(enc[0]))
	dec, err := c.Decode(enc)
	require.NoError(t, err)
	require.Len(t, dec, 1)
	assert.True(t, proto.Equal(p, dec[0]), "the payload does not decode into itself")
	return enc[0]
}

func TestCodec(t *testing.T) {
	t.Run("small payloads pass unchanged", func(t *testing.T) {
		c := &temporalgraph.Codec{}
		p := payloadOf(t, graphtest.State{Log: []string{"small"}})
		enc := roundTrip(t, c, p, "json/plain")
		assert.True(t, proto.Equal(p, enc))
	})
	t.Run("medium payloads are compressed", func(t *testing.T) {
		c := &temporalgraph.Codec{}
		p := payloadOf(t, strings.Repeat("a state that repeats itself ", 3000))
		enc := roundTrip(t, c, p, "binary/deepgraph-deflate")
		assert.Less(t, proto.Size(enc), proto.Size(p)/10)
	})
	t.Run("large payloads go to the store", func(t *testing.T) {
		dir := t.TempDir()
		c := &temporalgraph.Codec{Store: temporalgraph.DirStore(dir)}
		p := payloadOf(t, randomText(1, 1<<19))
		enc := roundTrip(t, c, p, "binary/deepgraph-blob")
		key := string(enc.Data)
		assert.Len(t, key, 64)
		assert.Less(t, proto.Size(enc), 1024)
		files := blobs(t, dir)
		assert.Equal(t, []string{filepath.Join(dir, key[:2], key)}, files)

		// The same payload is the same blob, stored once.
		again := roundTrip(t, c, p, "binary/deepgraph-blob")
		assert.Equal(t, key, string(again.Data))
		assert.Equal(t, files, blobs(t, dir))
	})
	t.Run("incompressible payloads pass unchanged", func(t *testing.T) {
		raw := make([]byte, 16<<10)
		r := rand.New(rand.NewPCG(2, 2))
		for i := range raw {
			raw[i] = byte(r.Uint32())
		}
		c := &temporalgraph.Codec{}
		p := payloadOf(t, raw) // binary/plain
		enc := roundTrip(t, c, p, "binary/plain")
		assert.True(t, proto.Equal(p, enc))
	})
	t.Run("thresholds", func(t *testing.T) {
		c := &temporalgraph.Codec{CompressAbove: 100, OffloadAbove: 300, Store: temporalgraph.DirStore(t.TempDir())}
		roundTrip(t, c, payloadOf(t, "short"), "json/plain")
		roundTrip(t, c, payloadOf(t, strings.Repeat("ab", 200)), "binary/deepgraph-deflate")
		roundTrip(t, c, payloadOf(t, randomText(3, 1000)), "binary/deepgraph-blob")
	})
	t.Run("several payloads", func(t *testing.T) {
		c := &temporalgraph.Codec{Store: temporalgraph.DirStore(t.TempDir())}
		ps := []*commonpb.Payload{payloadOf(t, "small"), payloadOf(t, strings.Repeat("x", 10000)), payloadOf(t, randomText(4, 1<<19))}
		enc, err := c.Encode(ps)
		require.NoError(t, err)
		assert.Equal(t, []string{"json/plain", "binary/deepgraph-deflate", "binary/deepgraph-blob"}, []string{encoding(enc[0]), encoding(enc[1]), encoding(enc[2])})
		dec, err := c.Decode(enc)
		require.NoError(t, err)
		for i := range ps {
			assert.True(t, proto.Equal(ps[i], dec[i]), "payload %d", i)
		}
	})
	t.Run("a large payload without a store", func(t *testing.T) {
		_, err := (&temporalgraph.Codec{}).Encode([]*commonpb.Payload{payloadOf(t, randomText(5, 1<<19))})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "BlobStore")
		assert.Contains(t, err.Error(), "DirStore")
	})
	t.Run("a blob without a store", func(t *testing.T) {
		c := &temporalgraph.Codec{Store: temporalgraph.DirStore(t.TempDir())}
		enc, err := c.Encode([]*commonpb.Payload{payloadOf(t, randomText(6, 1<<19))})
		require.NoError(t, err)
		_, err = (&temporalgraph.Codec{}).Decode(enc)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "BlobStore")
	})
	t.Run("a missing blob", func(t *testing.T) {
		c := &temporalgraph.Codec{Store: temporalgraph.DirStore(t.TempDir())}
		enc, err := c.Encode([]*commonpb.Payload{payloadOf(t, randomText(7, 1<<19))})
		require.NoError(t, err)
		other := &temporalgraph.Codec{Store: temporalgraph.DirStore(t.TempDir())}
		_, err = other.Decode(enc)
		require.Error(t, err)
		assert.Contains(t, err.Error(), string(enc[0].Data))
		assert.Contains(t, err.Error(), "share the blob directory")
	})
	t.Run("a tampered blob is refused", func(t *testing.T) {
		dir := t.TempDir()
		c := &temporalgraph.Codec{Store: temporalgraph.DirStore(dir)}
		enc, err := c.Encode([]*commonpb.Payload{payloadOf(t, randomText(8, 1<<19))})
		require.NoError(t, err)
		key := string(enc[0].Data)
		path := filepath.Join(dir, key[:2], key)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		data[len(data)/2] ^= 1
		require.NoError(t, os.WriteFile(path, data, 0o600))
		_, err = c.Decode(enc)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "SHA-256")
	})
	t.Run("corrupt compressed data", func(t *testing.T) {
		c := &temporalgraph.Codec{}
		bad := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("binary/deepgraph-deflate")}, Data: []byte("not deflate")}
		_, err := c.Decode([]*commonpb.Payload{bad})
		require.Error(t, err)
	})
	t.Run("as the data converter", func(t *testing.T) {
		dc := temporalgraph.DataConverter(&temporalgraph.Codec{Store: temporalgraph.DirStore(t.TempDir())})
		for _, v := range []graphtest.State{{Log: []string{"a"}}, {Items: []string{strings.Repeat("b", 20000)}}, {Items: []string{randomText(9, 1<<19)}}} {
			p, err := dc.ToPayload(v)
			require.NoError(t, err)
			var back graphtest.State
			require.NoError(t, dc.FromPayload(p, &back))
			assert.Equal(t, v, back)
		}
	})
}

func TestDirStore(t *testing.T) {
	dir := t.TempDir()
	s := temporalgraph.DirStore(filepath.Join(dir, "blobs"))
	ctx := context.Background()
	key := strings.Repeat("ab", 32)
	require.NoError(t, s.Put(ctx, key, []byte("data")))
	require.NoError(t, s.Put(ctx, key, []byte("data")), "Put is idempotent")
	got, err := s.Get(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, []byte("data"), got)
	assert.Equal(t, []string{filepath.Join(dir, "blobs", "ab", key)}, blobs(t, dir), "no temporary file is left")

	for _, bad := range []string{"", "ab", strings.Repeat("a", 63), strings.Repeat("a", 65), strings.Repeat("AB", 32),
		"../" + strings.Repeat("a", 61), strings.Repeat("a", 60) + "/../", strings.Repeat("g", 64)} {
		err := s.Put(ctx, bad, []byte("x"))
		require.Error(t, err, "key %q", bad)
		assert.Contains(t, err.Error(), "not a blob key")
		_, err = s.Get(ctx, bad)
		require.Error(t, err, "key %q", bad)
		assert.Contains(t, err.Error(), "not a blob key")
	}
	assert.Len(t, blobs(t, dir), 1, "a bad key wrote nothing")

	_, err = s.Get(ctx, strings.Repeat("cd", 32))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not in")
}

// bigChunk is what each of bigGraph's four tasks adds to the state: 8 MB
// in all, or 2 MB under the race detector, still well over what Temporal
// takes in a payload once compressed.
func bigChunk() int {
	if raceEnabled {
		return 512 << 10
	}
	return 2 << 20
}

// bigGraph builds a state of 4×bigChunk bytes: four Send tasks add a chunk
// of text each, then measure reads it all.
func bigGraph(t *testing.T) *graph.Compiled[graphtest.State] {
	chunk := bigChunk()
	g := graphtest.New()
	g.AddNode("split", graphtest.LogNode("split"))
	graph.AddTask(g, "write", func(_ context.Context, i int) (graph.Update[graphtest.State], error) {
		return graph.Writes(graphtest.Items.Add(randomText(uint64(100+i), chunk))), nil
	})
	g.AddNode("measure", func(_ context.Context, s graphtest.State) (graph.Update[graphtest.State], error) {
		n := 0
		for _, it := range s.Items {
			n += len(it)
		}
		return graph.Writes(graphtest.N.Set(n), graphtest.Log.Add(fmt.Sprint("measured ", len(s.Items)))), nil
	})
	g.AddEdge(graph.Start, "split")
	graph.AddFanOut(g, "split", "write", func(graphtest.State) []int { return []int{0, 1, 2, 3} })
	g.AddEdge("write", "measure")
	g.AddEdge("measure", graph.End)
	return tgCompile(t, g)
}

func TestLargeState(t *testing.T) {
	want, err := bigGraph(t).Invoke(context.Background(), graphtest.State{})
	require.NoError(t, err)
	require.Equal(t, 4*bigChunk(), want.N)

	dir := t.TempDir()
	codec := &temporalgraph.Codec{Store: temporalgraph.DirStore(dir)}
	g := newGraph(t, "big", bigGraph(t), temporalgraph.Options[graphtest.State]{})
	env := newEnv(t)
	env.SetDataConverter(temporalgraph.DataConverter(codec))
	// The workflow encodes and decodes the 8 MB state on its own goroutine
	// (the engine's JSON, the codec's deflate and blob I/O): some 0.4–1s
	// without the race detector, close to the SDK's 1s deadlock
	// detection, and over it with the race detector.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 20 * time.Second})
	g.Register(env)
	got, err := execute(t, env, g, temporalgraph.Input[graphtest.State]{})
	require.NoError(t, err)
	assert.Equal(t, want.N, got.N)
	assert.Equal(t, []string{"split", "measured 4"}, got.Log)
	assert.True(t, equalState(want, got), "the workflow's state differs from Invoke's")

	// The updates and the states went to the store.
	files := blobs(t, dir)
	assert.GreaterOrEqual(t, len(files), 5, "four updates and the final state at least: %v", files)
	for _, f := range files {
		assert.NotContains(t, f, ".tmp")
	}

	// The state itself, as the history holds it, is a reference.
	dc := temporalgraph.DataConverter(codec)
	p, err := dc.ToPayload(got)
	require.NoError(t, err)
	assert.Less(t, proto.Size(p), 1024)
	assert.Equal(t, "binary/deepgraph-blob", encoding(p))
	var back graphtest.State
	require.NoError(t, dc.FromPayload(p, &back))
	assert.True(t, equalState(want, back))
}

// equalState compares states without printing megabytes when they differ.
func equalState(a, b graphtest.State) bool {
	return fmt.Sprint(a.Log, a.N, a.Total, a.Counts) == fmt.Sprint(b.Log, b.N, b.Total, b.Counts) &&
		strings.Join(a.Items, "\x00") == strings.Join(b.Items, "\x00") && len(a.Items) == len(b.Items)
}

// countingStore counts the Puts that reach a DirStore.
type countingStore struct {
	temporalgraph.DirStore
	puts atomic.Int32
}

func (s *countingStore) Put(ctx context.Context, key string, data []byte) error {
	s.puts.Add(1)
	return s.DirStore.Put(ctx, key, data)
}

// A step sends one state to each of its tasks: the codec compresses and
// stores it once, and each task's payload is the same reference.
func TestCodecEncodesAStepsStateOnce(t *testing.T) {
	store := &countingStore{DirStore: temporalgraph.DirStore(t.TempDir())}
	c := &temporalgraph.Codec{Store: store}
	state := payloadOf(t, randomText(7, 1<<20))
	var first *commonpb.Payload
	for range 8 {
		out, err := c.Encode([]*commonpb.Payload{state})
		require.NoError(t, err)
		require.Equal(t, "binary/deepgraph-blob", encoding(out[0]))
		if first == nil {
			first = out[0]
		}
		require.Equal(t, first.Data, out[0].Data)
	}
	assert.Equal(t, int32(1), store.puts.Load())
}
