//go:build linux

package browser

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/tools"
)

// tagged counts the live processes of a session's browser.
func tagged(tag string) int { return scanWith([]byte(tagVar+"="+tag), false) }

// TestCloseLeavesNothing: after Close no process of the browser is left
// and its profile directory is gone.
func TestCloseLeavesNothing(t *testing.T) {
	web := newSite(t)
	web.page("/", `<!doctype html><title>Hi</title><p>Hello.</p>`)
	web.srv.Client().CloseIdleConnections()
	goroutines := runtime.NumGoroutine()
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
	// No goroutine of the session outlives it (the test server's
	// connections close as the browser is gone; give them a moment).
	after := runtime.NumGoroutine()
	for end := time.Now().Add(5 * time.Second); after > goroutines && time.Now().Before(end); after = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	if !assert.LessOrEqual(t, after, goroutines, "goroutines outlive Close") {
		buf := make([]byte, 1<<20)
		t.Logf("%s", buf[:runtime.Stack(buf, true)])
	}
}

// TestCloseDuringAction: Close from another goroutine while an action
// waits for a page that never loads ends the action instead of waiting for
// it, and leaves nothing behind.
func TestCloseDuringAction(t *testing.T) {
	web := newSite(t)
	requested := make(chan struct{}, 1)
	web.mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		requested <- struct{}{}
		<-r.Context().Done()
	})
	s := newSession(t, Options{ActionTimeout: 10 * time.Minute})
	mustDo(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/")})
	tag := s.run.tag
	done := make(chan tools.Result, 1)
	go func() {
		res, _ := s.Run(context.Background(), []byte(`{"action":"go_to_url","url":"`+web.url("shop.test", "/hang")+`"}`))
		done <- res
	}()
	<-requested
	s.Close()
	select {
	case res := <-done:
		t.Logf("the action ended with: %s", res.Content())
	case <-time.After(2 * time.Minute):
		t.Fatal("the action went on after Close")
	}
	assert.Zero(t, tagged(tag))
	assert.Contains(t, do(t, s, map[string]any{"action": "screenshot"}).Error, "the browser is closed")
}

// TestConcurrentCloseWaits: when two Closes meet (an MCP session's end
// and its command's exit), the one that finds the browser already being
// stopped returns only once it is stopped: a process that exits after
// either Close leaves nothing behind.
func TestConcurrentCloseWaits(t *testing.T) {
	web := newSite(t)
	web.page("/", `<!doctype html><title>Hi</title><p>Hello.</p>`)
	s := newSession(t, Options{})
	mustDo(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/")})
	dir, tag := s.run.dir, s.run.tag
	first := make(chan struct{})
	go func() {
		defer close(first)
		s.Close()
	}()
	// Wait until the first Close has taken the browser, then close again.
	for {
		s.runMu.Lock()
		taken := s.run == nil
		s.runMu.Unlock()
		if taken {
			break
		}
		runtime.Gosched()
	}
	s.Close()
	assert.Zero(t, tagged(tag), "the second Close returned while the browser's processes ran")
	_, err := os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "the second Close returned before the profile was removed: %v", err)
	<-first
}
