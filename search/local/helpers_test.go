package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deepgraph/deepgraph/search"
	"github.com/stretchr/testify/require"
)

// corpus is a generated document tree in a temporary directory, with its
// own index cache directory.
type corpus struct {
	t     testing.TB
	root  string
	cache string
}

func newCorpus(t testing.TB) *corpus {
	return &corpus{t: t, root: t.TempDir(), cache: t.TempDir()}
}

func (c *corpus) path(rel string) string { return filepath.Join(c.root, filepath.FromSlash(rel)) }

func (c *corpus) write(rel, content string) {
	c.t.Helper()
	p := c.path(rel)
	require.NoError(c.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(c.t, os.WriteFile(p, []byte(content), 0o644))
}

func (c *corpus) remove(rel string) {
	c.t.Helper()
	require.NoError(c.t, os.Remove(c.path(rel)))
}

// setMtime gives a file a distinct modification time.
func (c *corpus) setMtime(rel string, at time.Time) {
	c.t.Helper()
	require.NoError(c.t, os.Chtimes(c.path(rel), at, at))
}

// open opens the corpus's index (closed when the test ends).
func (c *corpus) open(opts ...Option) *Index {
	c.t.Helper()
	ix, err := Open(context.Background(), c.root, append([]Option{WithCacheDir(c.cache)}, opts...)...)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { _ = ix.Close() })
	return ix
}

func (c *corpus) rel(t testing.TB, r search.Result) string {
	t.Helper()
	loc, err := ParseLocation(r.URL)
	require.NoError(t, err)
	rel, err := filepath.Rel(c.root, loc.Path)
	require.NoError(t, err)
	return filepath.ToSlash(rel)
}

// find searches and returns the relative paths of the results, best first.
func (c *corpus) find(t testing.TB, ix *Index, q string) []string {
	t.Helper()
	rs, err := ix.Search(context.Background(), q, search.Options{MaxResults: 20})
	require.NoError(t, err)
	paths := []string{}
	for _, r := range rs {
		paths = append(paths, c.rel(t, r))
	}
	return paths
}

func refresh(t testing.TB, ix *Index) RefreshStats {
	t.Helper()
	st, err := ix.Refresh(context.Background())
	require.NoError(t, err)
	return st
}
