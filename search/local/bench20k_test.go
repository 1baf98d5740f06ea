package local

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deepgraph/deepgraph/search"
	"github.com/stretchr/testify/require"
)

// englishCommon are frequent English words in rough frequency order: the
// head of the generated vocabulary, so the words that are common in the
// corpus are the ones that are common in real text (and some of them are
// query stopwords, most are not).
var englishCommon = strings.Fields(`the of and to a in is it you that he was for on are
with as i his they be at one have this from or had by not word but what some we can out
other were all there when up use your how said an each she which do their time if will way
about many then them write would like so these her long make thing see him two has look
more day could go come did number sound no most people my over know water than call first
who may down side been now find any new work part take get place made live where after
back little only round man year came show every good me give our under name very through
just form sentence great think say help low line differ turn cause much mean before move
right boy old too same tell does set three want air well also play small end put home read
hand port large spell add even land here must big high such follow act why ask men change
went light kind off need house picture try us again animal point mother world near build
self earth father`)

// zipfVocab is a deterministic vocabulary of n distinct words, most
// frequent first: englishCommon, then pronounceable invented words (the
// "content words" of a technical corpus).
func zipfVocab(rng *rand.Rand, n int) []string {
	onsets := strings.Fields("b c d f g h j k l m n p r s t v w z br cr dr fl gr kl pl pr st tr")
	nuclei := strings.Fields("a e i o u ai ea ou")
	codas := []string{"", "", "", "n", "r", "m", "k", "x", "t"}
	seen := make(map[string]bool, n)
	vocab := make([]string, 0, n)
	for _, w := range englishCommon {
		seen[w] = true
		vocab = append(vocab, w)
	}
	for len(vocab) < n {
		var sb strings.Builder
		for range 2 + rng.IntN(3) {
			sb.WriteString(onsets[rng.IntN(len(onsets))])
			sb.WriteString(nuclei[rng.IntN(len(nuclei))])
			sb.WriteString(codas[rng.IntN(len(codas))])
		}
		if w := sb.String(); !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	return vocab
}

// bigCorpus describes a generated corpus and the fixed queries run on it.
type bigCorpus struct {
	files   int
	vocab   []string
	queries []benchQuery
}

type benchQuery struct {
	kind string // content, mixed, common, short
	text string
}

// genBigCorpus writes files Markdown files of about 3 KB (a title and 8
// sections of two paragraphs, so 8 passages each) into root, in 100
// sub-directories. Words follow a Zipf distribution (s = 1.05) over a
// 30,000-word vocabulary, so "the" is in nearly every passage and a word
// of rank 30 in about a quarter of them. It is deterministic.
func genBigCorpus(tb testing.TB, root string, files int) bigCorpus {
	tb.Helper()
	rng := rand.New(rand.NewPCG(20, 13))
	vocab := zipfVocab(rng, 30_000)
	zipf := rand.NewZipf(rng, 1.05, 1, uint64(len(vocab)-1))
	sentence := func(sb *strings.Builder, words int) {
		for i := range words {
			w := vocab[zipf.Uint64()]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				sb.WriteByte(' ')
			}
			sb.WriteString(w)
		}
		sb.WriteString(". ")
	}
	heading := func(sb *strings.Builder, level, words int) {
		sb.WriteString(strings.Repeat("#", level))
		for range words {
			sb.WriteByte(' ')
			sb.WriteString(vocab[zipf.Uint64()])
		}
		sb.WriteString("\n\n")
	}
	var sb strings.Builder
	for i := range files {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", i%100))
		if i < 100 {
			require.NoError(tb, os.MkdirAll(dir, 0o755))
		}
		sb.Reset()
		heading(&sb, 1, 3+rng.IntN(3))
		for range 8 {
			heading(&sb, 2, 2+rng.IntN(3))
			for range 2 {
				for range 2 + rng.IntN(2) {
					sentence(&sb, 6+rng.IntN(9))
				}
				sb.WriteString("\n\n")
			}
		}
		require.NoError(tb, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.md", i)), []byte(sb.String()), 0o644))
	}
	return bigCorpus{files: files, vocab: vocab, queries: bigQueries(vocab)}
}

// bigQueries is the fixed query set: 16 each of
//   - content: three content words (frequency rank 300–20,000) in a
//     model-style question;
//   - mixed: two content words and two common words (rank 8–80, in 8–60%
//     of the passages);
//   - common: four common words only (rank 8–80, none a stopword);
//   - short: one or two content words.
func bigQueries(vocab []string) []benchQuery {
	rng := rand.New(rand.NewPCG(7, 7))
	in := func(lo, hi int) string {
		for {
			w := vocab[lo+rng.IntN(hi-lo)]
			if !stopwords[w] {
				return w
			}
		}
	}
	content := func() string { return in(300, 20_000) }
	common := func() string { return in(8, 80) }
	var qs []benchQuery
	for range 16 {
		qs = append(qs,
			benchQuery{"content", fmt.Sprintf("What does %s mean for %s and how is it related to %s?", content(), content(), content())},
			benchQuery{"mixed", fmt.Sprintf("how %s %s %s %s", common(), content(), common(), content())},
			benchQuery{"common", fmt.Sprintf("%s %s %s %s", common(), common(), common(), common())},
		)
		if rng.IntN(2) == 0 {
			qs = append(qs, benchQuery{"short", content()})
		} else {
			qs = append(qs, benchQuery{"short", content() + " " + content()})
		}
	}
	return qs
}

// BenchmarkCorpus20k is issue 13's corpus benchmark: 20,000 Markdown files
// of about 3 KB (about 160k passages). The index is built once before the
// timed loop; one iteration runs the fixed query set (64 queries, top 5).
// Reported: p50-ms and p95-ms query latency over all queries run, p95 per
// query kind, index-s for the first index into an empty cache and
// refresh-ms for the median of 5 refreshes that find nothing to do.
//
//	go test -run '^$' -bench Corpus20k -benchtime 3x ./search/local
func BenchmarkCorpus20k(b *testing.B) {
	files := 20_000
	if testing.Short() { // CI's short form (docs/testing.md)
		files = 2_000
	}
	root := b.TempDir()
	bc := genBigCorpus(b, root, files)
	ctx := context.Background()

	start := time.Now()
	ix, err := Open(ctx, root, WithCacheDir(b.TempDir()))
	require.NoError(b, err)
	indexTime := time.Since(start)
	defer func() { _ = ix.Close() }()
	require.Equal(b, bc.files, ix.LastRefresh().Indexed)
	b.Logf("%d files, %d passages", ix.LastRefresh().Files, ix.LastRefresh().Passages)

	var refreshes []time.Duration
	for range 5 {
		st, err := ix.Refresh(ctx)
		require.NoError(b, err)
		require.Equal(b, bc.files, st.Unchanged)
		refreshes = append(refreshes, st.Duration)
	}

	// One untimed pass warms the page cache and SQLite's.
	for _, q := range bc.queries {
		_, err := ix.Search(ctx, q.text, search.Options{MaxResults: 5})
		require.NoError(b, err)
	}
	var all []time.Duration
	byKind := map[string][]time.Duration{}
	b.ResetTimer()
	for b.Loop() {
		for _, q := range bc.queries {
			t0 := time.Now()
			rs, err := ix.Search(ctx, q.text, search.Options{MaxResults: 5})
			d := time.Since(t0)
			if err != nil || len(rs) == 0 {
				b.Fatalf("%s query %q: %d results, %v", q.kind, q.text, len(rs), err)
			}
			all = append(all, d)
			byKind[q.kind] = append(byKind[q.kind], d)
		}
	}
	b.StopTimer()
	b.ReportMetric(pctMs(all, 50), "p50-ms")
	b.ReportMetric(pctMs(all, 95), "p95-ms")
	for kind, ds := range byKind {
		b.ReportMetric(pctMs(ds, 95), kind+"-p95-ms")
	}
	b.ReportMetric(indexTime.Seconds(), "index-s")
	b.ReportMetric(pctMs(refreshes, 50), "refresh-ms")
}

// pctMs returns the p-th percentile (nearest rank) of ds in milliseconds.
func pctMs(ds []time.Duration, p int) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	i = min(max(i-1, 0), len(s)-1)
	return float64(s[i]) / float64(time.Millisecond)
}
