package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deepgraph/deepgraph/search"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIndexFollowsCorpusChanges(t *testing.T) {
	c := newCorpus(t)
	c.write("a.md", "# Animals\n\nThe aardvark digs at night.\n")
	c.write("notes/b.txt", "A badger met a fox.\n")
	c.write("web/c.html", "<title>C</title><p>The capybara is calm.</p>")

	ix := c.open()
	st := ix.LastRefresh()
	assert.Equal(t, 3, st.Scanned)
	assert.Equal(t, 3, st.Indexed)
	assert.Equal(t, 3, st.Files)
	assert.Equal(t, []string{"a.md"}, c.find(t, ix, "aardvark"))
	assert.Equal(t, []string{"notes/b.txt"}, c.find(t, ix, "badger"))
	assert.Equal(t, []string{"web/c.html"}, c.find(t, ix, "capybara"))

	// Change a file: its old text disappears, the new one is found.
	c.write("a.md", "# Animals\n\nThe zebra runs all day long.\n")
	c.setMtime("a.md", time.Now().Add(time.Minute))
	st = refresh(t, ix)
	assert.Equal(t, 1, st.Indexed)
	assert.Equal(t, 2, st.Unchanged)
	assert.Empty(t, c.find(t, ix, "aardvark"))
	assert.Equal(t, []string{"a.md"}, c.find(t, ix, "zebra"))

	// Delete a file.
	c.remove("notes/b.txt")
	st = refresh(t, ix)
	assert.Equal(t, 1, st.Removed)
	assert.Equal(t, 2, st.Files)
	assert.Empty(t, c.find(t, ix, "badger"))

	// Add a file.
	c.write("d.markdown", "Dingo facts.\n")
	st = refresh(t, ix)
	assert.Equal(t, 1, st.Indexed)
	assert.Equal(t, []string{"d.markdown"}, c.find(t, ix, "dingo"))

	// Same size, different content, new mtime: re-indexed.
	c.write("a.md", "# Animals\n\nThe zebus runs all day long.\n")
	c.setMtime("a.md", time.Now().Add(2*time.Minute))
	st = refresh(t, ix)
	assert.Equal(t, 1, st.Indexed)
	assert.Equal(t, []string{"a.md"}, c.find(t, ix, "zebus"))
	assert.Empty(t, c.find(t, ix, "zebra"))

	// Only the mtime changes: the file is hashed, not re-indexed.
	c.setMtime("web/c.html", time.Now().Add(3*time.Minute))
	st = refresh(t, ix)
	assert.Equal(t, 0, st.Indexed)
	assert.Equal(t, 1, st.Touched)
	assert.Equal(t, 2, st.Unchanged)
	st = refresh(t, ix)
	assert.Equal(t, 3, st.Unchanged, "the touched file's new mtime was recorded")
	assert.Equal(t, []string{"web/c.html"}, c.find(t, ix, "capybara"))
}

func TestIndexLineRanges(t *testing.T) {
	c := newCorpus(t)
	var md strings.Builder
	md.WriteString("# Handbook\n\nIntro paragraph.\n")
	for i := range 30 {
		fmt.Fprintf(&md, "\n## Part %d\n\nFiller words about nothing in particular, repeated to take room.\nThe keyword marker%03d sits on this line.\nMore filler text closes the section.\n", i, i)
	}
	c.write("handbook.md", md.String())

	var html strings.Builder
	html.WriteString("<html>\n<head><title>Web Page</title></head>\n<body>\n")
	for i := range 20 {
		fmt.Fprintf(&html, "<h2>Topic %d</h2>\n<p>Some text\nthen htmlmark%03d here\n</p>\n", i, i)
	}
	html.WriteString("</body>\n</html>\n")
	c.write("page.html", html.String())

	ix := c.open(WithPassageSize(200))
	tests := []struct {
		file, word, title string
	}{
		{"handbook.md", "marker000", "Handbook › Part 0"},
		{"handbook.md", "marker017", "Handbook › Part 17"},
		{"handbook.md", "marker029", "Handbook › Part 29"},
		{"page.html", "htmlmark000", "Web Page › Topic 0"},
		{"page.html", "htmlmark013", "Web Page › Topic 13"},
	}
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			rs, err := ix.Search(context.Background(), tt.word, search.Options{MaxResults: 3})
			require.NoError(t, err)
			require.NotEmpty(t, rs)
			r := rs[0]
			loc, err := ParseLocation(r.URL)
			require.NoError(t, err)
			assert.Equal(t, c.path(tt.file), loc.Path)
			assert.Equal(t, tt.title, r.Title)
			assert.Equal(t, ProviderName, r.Provider)
			assert.Greater(t, r.Score, 0.0)
			assert.Contains(t, r.Content, tt.word)
			assert.Contains(t, r.Snippet, tt.word)

			src, err := os.ReadFile(loc.Path)
			require.NoError(t, err)
			lines := strings.Split(string(src), "\n")
			require.True(t, loc.StartLine >= 1 && loc.EndLine >= loc.StartLine && loc.EndLine <= len(lines), "%v", loc)
			cited := strings.Join(lines[loc.StartLine-1:loc.EndLine], "\n")
			assert.Contains(t, cited, tt.word, "the cited lines hold the match")
			assert.True(t, strings.Contains(lines[loc.StartLine-1], "Part") || strings.Contains(lines[loc.StartLine-1], "Topic"),
				"the passage starts at its heading, got line %d: %q", loc.StartLine, lines[loc.StartLine-1])
			if tt.file == "handbook.md" {
				// Markdown passages are the source lines, blank lines collapsed.
				assert.Equal(t, collapseBlankLines(cited), r.Content)
			}
		})
	}
}

func collapseBlankLines(s string) string {
	for strings.Contains(s, "\n\n\n") {
		s = strings.ReplaceAll(s, "\n\n\n", "\n\n")
	}
	return strings.TrimSpace(s)
}

func TestIndexSkipsFiles(t *testing.T) {
	c := newCorpus(t)
	c.write("good.md", "gnu antelope\n")
	c.write("bin.txt", "gnu\x00\x01\x02 binary")
	c.write("latin1.txt", "caf\xe9 gnu")
	c.write("big.md", "gnu "+strings.Repeat("x", 2000))
	c.write("paper.pdf", "%PDF-1.7 gnu")
	c.write(".git/notes.md", "gnu in git")
	c.write(".hidden.md", "gnu hidden")
	c.write("img.png", "\x89PNG gnu")
	c.write("node/readme.md", "\uFEFFgnu with a byte order mark\r\n")
	require.NoError(t, os.Symlink(c.path("good.md"), c.path("link.md")))

	var logs bytes.Buffer
	ix := c.open(WithMaxFileSize(1024), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	st := ix.LastRefresh()

	reasons := map[string]SkipReason{}
	for _, s := range st.Skipped {
		reasons[s.Path] = s.Reason
		assert.NotEmpty(t, s.String())
	}
	assert.Equal(t, map[string]SkipReason{
		"bin.txt":    SkipBinary,
		"latin1.txt": SkipNotUTF8,
		"big.md":     SkipTooLarge,
		"paper.pdf":  SkipUnsupported,
		"link.md":    SkipSymlink,
	}, reasons)
	assert.Equal(t, 2, st.Files)
	assert.Equal(t, 2, st.Ignored, "img.png and .hidden.md")
	assert.ElementsMatch(t, []string{"good.md", "node/readme.md"}, c.find(t, ix, "gnu"))
	assert.Contains(t, logs.String(), "big.md")
	assert.Contains(t, logs.String(), "too large")

	// The skipped files are there for a caller to warn about (search.Skipper).
	var skipper search.Skipper = ix
	assert.Len(t, skipper.Skipped(), 5)
	assert.Contains(t, skipper.Skipped(), "paper.pdf: unsupported format (PDF is not supported; convert it to text (for example with pdftotext) next to it)")

	rs, err := ix.Search(context.Background(), "byte order mark", search.Options{})
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.True(t, strings.HasPrefix(rs[0].Content, "gnu"), "BOM stripped: %q", rs[0].Content)

	// A file that turns binary leaves the index.
	c.write("good.md", "gnu\x00")
	st = refresh(t, ix)
	assert.Equal(t, 1, st.Removed)
	assert.Equal(t, []string{"node/readme.md"}, c.find(t, ix, "gnu"))
}

func TestIndexPersistence(t *testing.T) {
	c := newCorpus(t)
	for i := range 12 {
		c.write(fmt.Sprintf("d%02d.md", i), fmt.Sprintf("# Doc %d\n\nword%d shared\n", i, i))
	}
	ix := c.open()
	assert.Equal(t, 12, ix.LastRefresh().Indexed)
	dir := ix.IndexDir()
	assert.Equal(t, c.cache, filepath.Dir(dir), "the index lives in a per-corpus directory under the cache root")
	assert.FileExists(t, filepath.Join(dir, indexFile))
	assert.Equal(t, c.root, ix.Root())
	require.NoError(t, ix.Close())

	ix = c.open()
	st := ix.LastRefresh()
	assert.Equal(t, 0, st.Indexed, "unchanged files are not re-indexed on reopen")
	assert.Equal(t, 12, st.Unchanged)
	assert.Equal(t, dir, ix.IndexDir())
	assert.Equal(t, []string{"d07.md"}, c.find(t, ix, "word7"))
	require.NoError(t, ix.Close())

	// A different passage size invalidates the passages.
	ix = c.open(WithPassageSize(500))
	assert.Equal(t, 12, ix.LastRefresh().Indexed)
	require.NoError(t, ix.Close())

	// A damaged index file is rebuilt: it is only a cache.
	for _, s := range []string{"-wal", "-shm"} {
		_ = os.Remove(filepath.Join(dir, indexFile+s))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, indexFile), bytes.Repeat([]byte("not a database "), 500), 0o600))
	ix = c.open(WithPassageSize(500))
	assert.Equal(t, 12, ix.LastRefresh().Indexed)
	assert.Len(t, c.find(t, ix, "shared"), 12)
}

func TestIndexConcurrentSearchAndRefresh(t *testing.T) {
	c := newCorpus(t)
	for i := range 40 {
		c.write(fmt.Sprintf("s/%02d.md", i), fmt.Sprintf("# Stable %d\n\nstable content number %d\n", i, i))
	}
	ix := c.open()

	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				rs, err := ix.Search(ctx, "stable content", search.Options{MaxResults: 10})
				if err != nil {
					errs <- err
					return
				}
				if len(rs) != 10 {
					errs <- fmt.Errorf("got %d results, want 10", len(rs))
					return
				}
			}
		})
	}
	for round := range 3 {
		for i := range 20 {
			c.write(fmt.Sprintf("new/%d-%02d.md", round, i), fmt.Sprintf("fresh text round%d item %d\n", round, i))
		}
		wg.Go(func() {
			if _, err := ix.Refresh(ctx); err != nil {
				errs <- err
			}
		})
		_, err := ix.Refresh(ctx)
		require.NoError(t, err)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Equal(t, 100, refresh(t, ix).Files)
	assert.Len(t, c.find(t, ix, "round2"), 20)
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file.md")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	missing := filepath.Join(dir, "nope")

	tests := []struct {
		name    string
		dir     string
		opts    []Option
		want    string
		wantIs  error
		noCache bool
	}{
		{name: "missing", dir: missing, want: `corpus directory "` + missing + `" does not exist`, wantIs: fs.ErrNotExist},
		{name: "file", dir: file, want: `corpus path "` + file + `" is a file, not a directory`},
		{name: "empty", dir: "", want: "no corpus directory given"},
		{name: "cache under a file", dir: dir, opts: []Option{WithCacheDir(filepath.Join(file, "cache"))}, want: "cannot create the index directory", noCache: true},
		{name: "passage size", dir: dir, opts: []Option{WithPassageSize(10)}, want: "WithPassageSize(10)"},
		{name: "max file size", dir: dir, opts: []Option{WithMaxFileSize(0)}, want: "WithMaxFileSize(0)"},
		{name: "nil logger", dir: dir, opts: []Option{WithLogger(nil)}, want: "nil logger"},
		{name: "empty cache dir", dir: dir, opts: []Option{WithCacheDir("")}, want: "WithCacheDir: empty", noCache: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if !tt.noCache {
				opts = append([]Option{WithCacheDir(t.TempDir())}, opts...)
			}
			ix, err := Open(context.Background(), tt.dir, opts...)
			require.Error(t, err)
			assert.Nil(t, ix)
			assert.Contains(t, err.Error(), tt.want)
			if tt.wantIs != nil {
				assert.ErrorIs(t, err, tt.wantIs)
			}
		})
	}
}

func TestOpenUnwritableCache(t *testing.T) {
	if os.Geteuid() == 0 || runtime.GOOS == "windows" {
		t.Skip("permissions are not enforced for root / on Windows")
	}
	cache := t.TempDir()
	require.NoError(t, os.Chmod(cache, 0o500))
	t.Cleanup(func() { _ = os.Chmod(cache, 0o700) })
	_, err := Open(context.Background(), t.TempDir(), WithCacheDir(cache))
	require.Error(t, err)
	assert.Contains(t, err.Error(), cache)
}

func TestSearchOptionsAndErrors(t *testing.T) {
	c := newCorpus(t)
	for i := range 8 {
		c.write(fmt.Sprintf("f%d.txt", i), fmt.Sprintf("common word and item%d\n", i))
	}
	c.write("old.txt", "common ancient\n")
	c.setMtime("old.txt", time.Now().Add(-3*365*24*time.Hour))
	ix := c.open()
	ctx := context.Background()

	tests := []struct {
		name string
		opts search.Options
		want int
	}{
		{"default max", search.Options{}, search.DefaultMaxResults},
		{"two", search.Options{MaxResults: 2}, 2},
		{"more than there are", search.Options{MaxResults: 1000}, 9},
		{"year excludes old file", search.Options{MaxResults: 50, TimeRange: "year"}, 8},
		{"language ignored", search.Options{MaxResults: 50, Language: "de"}, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := ix.Search(ctx, "common", tt.opts)
			require.NoError(t, err)
			assert.Len(t, rs, tt.want)
			for i := 1; i < len(rs); i++ {
				assert.GreaterOrEqual(t, rs[i-1].Score, rs[i].Score, "best first")
			}
		})
	}

	rs, err := ix.Search(ctx, "no such thing", search.Options{})
	require.NoError(t, err)
	assert.NotNil(t, rs)
	assert.Empty(t, rs)

	_, err = ix.Search(ctx, "  ?! ", search.Options{})
	assert.ErrorIs(t, err, ErrEmptyQuery)

	_, err = ix.Search(ctx, "common", search.Options{TimeRange: "decade"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"decade"`)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = ix.Search(cancelled, "common", search.Options{})
	assert.ErrorIs(t, err, context.Canceled)

	assert.Equal(t, "local", ix.Name())
	require.NoError(t, ix.Close())
	require.NoError(t, ix.Close(), "Close is idempotent")
	_, err = ix.Search(ctx, "common", search.Options{})
	assert.ErrorIs(t, err, ErrClosed)
	_, err = ix.Refresh(ctx)
	assert.ErrorIs(t, err, ErrClosed)
}

func TestSearchRanking(t *testing.T) {
	c := newCorpus(t)
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 6)
	c.write("all.md", "Durable checkpoint storage keeps runs safe. "+filler)
	c.write("one.md", "A checkpoint is a snapshot. "+filler)
	c.write("other.md", "Storage of blobs. "+filler)
	c.write("none.md", "Nothing relevant here. "+filler)
	c.write("heading.md", "# Zeppelin\n\n"+filler+"\n")
	c.write("body.md", "# Airships\n\nA zeppelin "+filler+"\n")
	c.write("stem.md", "The corpus is indexed nightly. "+filler)
	ix := c.open()

	got := c.find(t, ix, "durable checkpoint storage")
	require.NotEmpty(t, got)
	assert.Equal(t, "all.md", got[0], "the passage with every word ranks first")
	assert.ElementsMatch(t, []string{"all.md", "one.md", "other.md"}, got, "partial matches are found too")

	assert.Equal(t, []string{"heading.md", "body.md"}, c.find(t, ix, "zeppelin"), "a title match outranks a body match")
	assert.Equal(t, []string{"stem.md"}, c.find(t, ix, "indexing"), "Porter stemming")
	got = c.find(t, ix, `"Durable" AND (checkpoint* NEAR storage`)
	require.NotEmpty(t, got, "syntax characters are only separators")
	assert.Equal(t, "all.md", got[0])
}

func TestRefreshCancelled(t *testing.T) {
	c := newCorpus(t)
	ix := c.open()
	for i := range 150 {
		c.write(fmt.Sprintf("d/%03d.txt", i), fmt.Sprintf("cancel test document %d\n", i))
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ix.Refresh(ctx)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "interrupted")

	// Cancel part-way: whatever was committed is consistent, and the next
	// refresh finishes the job.
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ix.Refresh(ctx)
		done <- err
	}()
	cancel()
	if err := <-done; err != nil {
		assert.ErrorIs(t, err, context.Canceled)
	}
	st := refresh(t, ix)
	assert.Equal(t, 150, st.Files)
	assert.Equal(t, 150, st.Indexed+st.Unchanged)
	assert.Len(t, c.find(t, ix, "document"), 20)
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	c := newCorpus(t)
	c.write("a.md", "leak check\n")
	ix, err := Open(context.Background(), c.root, WithCacheDir(c.cache))
	require.NoError(t, err)
	_, err = ix.Search(context.Background(), "leak", search.Options{})
	require.NoError(t, err)
	refresh(t, ix)
	require.NoError(t, ix.Close())
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(5 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before)
}

func TestSkippedFileString(t *testing.T) {
	assert.Equal(t, "a.pdf: unsupported format (convert it)", SkippedFile{Path: "a.pdf", Reason: SkipUnsupported, Detail: "convert it"}.String())
	assert.Equal(t, "b: symbolic link", SkippedFile{Path: "b", Reason: SkipSymlink}.String())
	assert.True(t, errors.Is(fmt.Errorf("x: %w", ErrClosed), ErrClosed))
}

func TestCacheInsideCorpus(t *testing.T) {
	c := newCorpus(t)
	c.write("a.md", "inside cache test\n")
	c.cache = filepath.Join(c.root, "index-cache")
	ix := c.open()
	require.DirExists(t, ix.IndexDir())
	// Put a supported file into the cache tree: the walk must not enter it.
	require.NoError(t, os.WriteFile(filepath.Join(ix.IndexDir(), "stray.md"), []byte("inside"), 0o600))
	st := refresh(t, ix)
	assert.Equal(t, 1, st.Files)
	assert.Equal(t, []string{"a.md"}, c.find(t, ix, "inside"))
}

func TestCorpusRootSymlink(t *testing.T) {
	c := newCorpus(t)
	c.write("a.md", "linked root works\n")
	link := filepath.Join(t.TempDir(), "notes")
	require.NoError(t, os.Symlink(c.root, link))
	ix, err := Open(context.Background(), link, WithCacheDir(c.cache))
	require.NoError(t, err)
	t.Cleanup(func() { _ = ix.Close() })
	assert.Equal(t, 1, ix.LastRefresh().Files)
	assert.Equal(t, []string{"a.md"}, c.find(t, ix, "linked"))
}
