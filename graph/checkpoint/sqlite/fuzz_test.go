package sqlite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzOpenPath opens stores under arbitrary file names: the file is created
// at exactly the path given and nowhere else — the name reaches SQLite
// through a file: URI, where '?', '#' and '%' mean something.
func FuzzOpenPath(f *testing.F) {
	for _, name := range []string{"store.db", "a b", "q?x=1", "h#f", "p%", "p%2F", "%00", "東京", "\xff\xfe", ":memory:", "file:x", "?", "#", "a\x00b"} {
		f.Add(name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') || len(name) > 200 {
			t.Skip("not one file name")
		}
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		s, err := Open(t.Context(), path)
		if strings.ContainsRune(name, 0) {
			require.ErrorContains(t, err, "not a file path")
			return
		}
		require.NoError(t, err)
		assert.Equal(t, path, s.Path())
		require.NoError(t, s.Put(t.Context(), checkpoint("t", "c1", "", 0)))
		require.NoError(t, s.Close())
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 1, "one file, the store")
		assert.Equal(t, name, entries[0].Name())
	})
}
