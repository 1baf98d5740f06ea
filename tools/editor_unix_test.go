//go:build unix

package tools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEditorRefusesFIFOs: opening a FIFO for reading blocks until a writer
// comes, and for writing until a reader does; the editor must refuse it at
// once instead, whatever the command.
func TestEditorRefusesFIFOs(t *testing.T) {
	e, ws := newTestEditor(t, EditorOptions{})
	require.NoError(t, syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o644))
	for _, args := range []map[string]any{
		{"command": "view", "path": "pipe"},
		{"command": "view", "path": "pipe", "view_range": []int{1, 2}},
		{"command": "create", "path": "pipe", "file_text": "x"},
		{"command": "str_replace", "path": "pipe", "old_str": "a", "new_str": "b"},
		{"command": "insert", "path": "pipe", "insert_line": 0, "new_str": "b"},
	} {
		t.Run(args["command"].(string), func(t *testing.T) {
			b, err := json.Marshal(args)
			require.NoError(t, err)
			type ran struct {
				res Result
				err error
			}
			done := make(chan ran, 1)
			go func() {
				res, err := e.Run(context.Background(), b)
				done <- ran{res, err}
			}()
			select {
			case r := <-done:
				require.NoError(t, r.err)
				assert.True(t, r.res.Failed())
				assert.Contains(t, r.res.Error, "pipe is a named pipe (FIFO), not a regular file")
			case <-time.After(10 * time.Second):
				// Unblock the hung open so the test can end.
				unblockFIFO(filepath.Join(ws, "pipe"))
				<-done
				t.Fatal("the editor blocked on the FIFO")
			}
		})
	}
}

// unblockFIFO opens both ends of the FIFO once, releasing an open blocked
// on either.
func unblockFIFO(p string) {
	if fd, err := syscall.Open(p, syscall.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
		time.Sleep(100 * time.Millisecond)
		_ = syscall.Close(fd)
	}
}

// TestEditorHonoursCancellation: a command waiting for the editor (another
// one holds it) returns when its context ends.
func TestEditorHonoursCancellation(t *testing.T) {
	e, ws := newTestEditor(t, EditorOptions{})
	writeFile(t, ws, "a.txt", "x\n")
	e.lock <- struct{}{} // an earlier command holds the editor
	defer func() { <-e.lock }()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Run(ctx, json.RawMessage(`{"command":"view","path":"a.txt"}`))
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not return when its context was cancelled")
	}
}
