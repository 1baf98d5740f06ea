//go:build linux

package browser

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tagged counts the live processes of a session's browser.
func tagged(tag string) int { return scanWith([]byte(tagVar+"="+tag), false) }

// TestCloseLeavesNothing: after Close no process of the browser is left
// and its profile directory is gone.
func TestCloseLeavesNothing(t *testing.T) {
	web := newSite(t)
	web.page("/", `<!doctype html><title>Hi</title><p>Hello.</p>`)
	s := newSession(t, Options{})
	mustDo(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/")})
	mustDo(t, s, map[string]any{"action": "open_tab", "url": web.url("docs.test", "/")})
	dir, tag := s.run.dir, s.run.tag
	require.DirExists(t, filepath.Join(dir, "profile"))
	procs := tagged(tag)
	require.GreaterOrEqual(t, procs, 3, "the browser runs several processes")
	s.Close()
	assert.Zero(t, tagged(tag), "processes of the browser survive Close")
	_, err := os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "the profile directory is still there: %v", err)
	res := do(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/")})
	assert.Contains(t, res.Error, "the browser is closed")
	t.Logf("%d processes before Close, none after", procs)
}
