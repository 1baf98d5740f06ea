package local

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deepgraph/deepgraph/search"
	"github.com/stretchr/testify/require"
)

const benchFiles = 10_000

// genCorpus writes n small Markdown and text files (about 1 KB each, a
// heading and a few paragraphs of words from a 3,000-word vocabulary with
// a Zipf-like distribution) in 100 sub-directories of root. It returns the
// vocabulary, most frequent word first.
func genCorpus(b *testing.B, root string, n int) []string {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 3000)
	for i := range vocab {
		var sb strings.Builder
		for range 3 + rng.IntN(7) {
			sb.WriteByte(byte('a' + rng.IntN(26)))
		}
		vocab[i] = sb.String()
	}
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	sentence := func(words int) string {
		parts := make([]string, words)
		for i := range parts {
			parts[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(parts, " ") + "."
	}
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", i%100))
		require.NoError(b, os.MkdirAll(dir, 0o755))
		var sb strings.Builder
		name := fmt.Sprintf("f%05d.md", i)
		if i%4 == 3 {
			name = fmt.Sprintf("f%05d.txt", i)
		} else {
			fmt.Fprintf(&sb, "# %s\n\n", sentence(3))
		}
		for range 3 + rng.IntN(3) {
			for range 2 + rng.IntN(3) {
				sb.WriteString(sentence(6 + rng.IntN(10)))
				sb.WriteByte('\n')
			}
			sb.WriteByte('\n')
		}
		require.NoError(b, os.WriteFile(filepath.Join(dir, name), []byte(sb.String()), 0o644))
	}
	return vocab
}

// BenchmarkIndex10k measures a full index build of 10,000 small files
// into an empty cache.
func BenchmarkIndex10k(b *testing.B) {
	root := b.TempDir()
	genCorpus(b, root, benchFiles)
	caches := b.TempDir()
	ctx := context.Background()
	runs := 0
	for b.Loop() {
		cache, err := os.MkdirTemp(caches, "c")
		require.NoError(b, err)
		ix, err := Open(ctx, root, WithCacheDir(cache))
		require.NoError(b, err)
		require.Equal(b, benchFiles, ix.LastRefresh().Indexed)
		require.NoError(b, ix.Close())
		runs++
	}
	b.ReportMetric(float64(benchFiles*runs)/b.Elapsed().Seconds(), "files/s")
}

// BenchmarkRefreshUnchanged10k measures a refresh that finds nothing to
// do (every file's size and mtime match): the cost of Open on a warm index.
func BenchmarkRefreshUnchanged10k(b *testing.B) {
	root := b.TempDir()
	genCorpus(b, root, benchFiles)
	ctx := context.Background()
	ix, err := Open(ctx, root, WithCacheDir(b.TempDir()))
	require.NoError(b, err)
	defer func() { _ = ix.Close() }()
	runs := 0
	for b.Loop() {
		st, err := ix.Refresh(ctx)
		require.NoError(b, err)
		require.Equal(b, benchFiles, st.Unchanged)
		runs++
	}
	b.ReportMetric(float64(benchFiles*runs)/b.Elapsed().Seconds(), "files/s")
}

// benchQueries builds free-text queries of the kind a model writes: three
// words of the given frequency ranks wrapped in question words (which the
// query builder drops).
func benchQueries(vocab []string, minRank, maxRank int) []string {
	rng := rand.New(rand.NewPCG(3, 4))
	word := func() string { return vocab[minRank+rng.IntN(maxRank-minRank)] }
	qs := make([]string, 64)
	for i := range qs {
		qs[i] = fmt.Sprintf("What does %s mean for %s and how is it related to %s?", word(), word(), word())
	}
	return qs
}

// BenchmarkSearch10k measures single queries (top 5) on the index of
// 10,000 files: ns/op is the query latency. "content-words" queries use
// words of frequency rank 50–3000, as real queries do once stopwords are
// gone; "common-words" queries use ranks 3–20, words found in most
// passages, the worst case for BM25 over an OR query (every matching
// passage is scored).
func BenchmarkSearch10k(b *testing.B) {
	root := b.TempDir()
	vocab := genCorpus(b, root, benchFiles)
	ctx := context.Background()
	ix, err := Open(ctx, root, WithCacheDir(b.TempDir()))
	require.NoError(b, err)
	defer func() { _ = ix.Close() }()

	run := func(qs []string) func(*testing.B) {
		return func(b *testing.B) {
			i := 0
			for b.Loop() {
				q := qs[i%len(qs)]
				rs, err := ix.Search(ctx, q, search.Options{MaxResults: 5})
				if err != nil || len(rs) == 0 {
					b.Fatalf("query %q: %d results, %v", q, len(rs), err)
				}
				i++
			}
		}
	}
	content := benchQueries(vocab, 50, len(vocab))
	b.Run("content-words", run(content))
	b.Run("common-words", run(benchQueries(vocab, 3, 20)))
	b.Run("content-words-parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, err := ix.Search(ctx, content[i%len(content)], search.Options{MaxResults: 5}); err != nil {
					b.Error(err)
					return
				}
				i++
			}
		})
	})
}
