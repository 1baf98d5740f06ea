//go:build unix

package tools

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEditorRefusesHardLinks: a hard link in the workspace may be another
// name of a file outside it (ln /outside/f ws/hl.txt); the editor neither
// reads nor changes a file with more than one link, whatever the command,
// and the outside file keeps its content.
func TestEditorRefusesHardLinks(t *testing.T) {
	outside := t.TempDir()
	writeFile(t, outside, "f.txt", "outside secret\n")
	e, ws := newTestEditor(t, EditorOptions{})
	require.NoError(t, os.Link(filepath.Join(outside, "f.txt"), filepath.Join(ws, "hl.txt")))
	for _, args := range []map[string]any{
		{"command": "str_replace", "path": "hl.txt", "old_str": "outside", "new_str": "changed"},
		{"command": "insert", "path": "hl.txt", "insert_line": 0, "new_str": "changed"},
		{"command": "create", "path": "hl.txt", "file_text": "changed\n"},
		{"command": "view", "path": "hl.txt"},
	} {
		t.Run(args["command"].(string), func(t *testing.T) {
			res := edit(t, e, args)
			require.True(t, res.Failed(), "must be refused, got %q", res.Output)
			assert.Contains(t, res.Error, "hl.txt has 2 hard links")
			assert.NotContains(t, res.Output+res.Error, "outside secret")
		})
	}
	assert.Equal(t, "outside secret\n", readFile(t, outside, "f.txt"), "the outside file is untouched")
}

// TestEditorReplacesFilesWhole: an edit writes a new file and renames it
// over the old one — never in place — keeping the mode, leaving no
// temporary file; a reader that had the old file open still reads the old
// content.
func TestEditorReplacesFilesWhole(t *testing.T) {
	e, ws := newTestEditor(t, EditorOptions{})
	p := filepath.Join(ws, "run.sh")
	require.NoError(t, os.WriteFile(p, []byte("echo one\n"), 0o750))
	require.NoError(t, os.Chmod(p, 0o750))
	before, err := os.Stat(p)
	require.NoError(t, err)
	old, err := os.Open(p)
	require.NoError(t, err)
	defer old.Close()

	res := edit(t, e, map[string]any{"command": "str_replace", "path": "run.sh", "old_str": "one", "new_str": "two"})
	require.False(t, res.Failed(), res.Error)
	after, err := os.Stat(p)
	require.NoError(t, err)
	assert.False(t, os.SameFile(before, after), "a new file took the name")
	assert.Equal(t, os.FileMode(0o750), after.Mode().Perm())
	assert.Equal(t, "echo two\n", readFile(t, ws, "run.sh"))
	b := make([]byte, 100)
	n, _ := old.ReadAt(b, 0)
	assert.Equal(t, "echo one\n", string(b[:n]), "the old file was not written in place")
	entries, err := os.ReadDir(ws)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left")

	// A symbolic link that stays inside is written through, and stays a link.
	require.NoError(t, os.Symlink("run.sh", filepath.Join(ws, "link.sh")))
	res = edit(t, e, map[string]any{"command": "str_replace", "path": "link.sh", "old_str": "two", "new_str": "three"})
	require.False(t, res.Failed(), res.Error)
	assert.Equal(t, "echo three\n", readFile(t, ws, "run.sh"))
	fi, err := os.Lstat(filepath.Join(ws, "link.sh"))
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link is still a link")
	res = edit(t, e, map[string]any{"command": "undo_edit", "path": "link.sh"})
	require.False(t, res.Failed(), res.Error)
	assert.Equal(t, "echo two\n", readFile(t, ws, "run.sh"))
}

// TestEditorRefusesSpecialFiles: sockets and devices, like named pipes,
// are neither read nor written.
func TestEditorRefusesSpecialFiles(t *testing.T) {
	e, ws := newTestEditor(t, EditorOptions{})
	sock := filepath.Join(ws, "s.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	files := map[string]string{"s.sock": "a socket"}
	if err := syscall.Mknod(filepath.Join(ws, "null"), syscall.S_IFCHR|0o666, int(devNull(t))); err == nil {
		files["null"] = "a device"
	} else {
		t.Logf("no device node (%v): devices are not tried", err)
	}
	for name, what := range files {
		for _, args := range []map[string]any{
			{"command": "view", "path": name},
			{"command": "create", "path": name, "file_text": "x"},
			{"command": "str_replace", "path": name, "old_str": "a", "new_str": "b"},
			{"command": "insert", "path": name, "insert_line": 0, "new_str": "b"},
		} {
			res := edit(t, e, args)
			require.True(t, res.Failed(), "%s %s must be refused", args["command"], name)
			assert.Contains(t, res.Error, name+" is "+what+", not a regular file")
		}
	}
	fi, err := os.Lstat(sock)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSocket, "the socket is still there")
}

// devNull is the device number of /dev/null.
func devNull(t *testing.T) uint64 {
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat("/dev/null", &st))
	return uint64(st.Rdev)
}

// TestEditorRacesBetweenCheckAndUse: between the editor's checks of a path
// and its write, the path is swapped — its directory for a symbolic link
// out of the workspace, the file for a link to an outside file (symbolic
// or hard), or for a named pipe. Nothing outside changes and nothing
// blocks: the write resolves the path again, inside the workspace, and
// replaces the name rather than writing through it.
func TestEditorRacesBetweenCheckAndUse(t *testing.T) {
	tests := []struct {
		name string
		path string
		swap func(t *testing.T, ws, outside string)
		// refused: the write fails (else it replaces the name inside).
		refused bool
	}{
		{"parent directory becomes a link out", "dir/f.txt", func(t *testing.T, ws, outside string) {
			require.NoError(t, os.Rename(filepath.Join(ws, "dir"), filepath.Join(ws, "dir.moved")))
			require.NoError(t, os.Symlink(outside, filepath.Join(ws, "dir")))
		}, true},
		{"file becomes a symbolic link out", "dir/f.txt", func(t *testing.T, ws, outside string) {
			require.NoError(t, os.Remove(filepath.Join(ws, "dir/f.txt")))
			require.NoError(t, os.Symlink(filepath.Join(outside, "f.txt"), filepath.Join(ws, "dir/f.txt")))
		}, false},
		{"file becomes a hard link out", "dir/f.txt", func(t *testing.T, ws, outside string) {
			require.NoError(t, os.Remove(filepath.Join(ws, "dir/f.txt")))
			require.NoError(t, os.Link(filepath.Join(outside, "f.txt"), filepath.Join(ws, "dir/f.txt")))
		}, false},
		{"file becomes a named pipe", "dir/f.txt", func(t *testing.T, ws, outside string) {
			require.NoError(t, os.Remove(filepath.Join(ws, "dir/f.txt")))
			require.NoError(t, syscall.Mkfifo(filepath.Join(ws, "dir/f.txt"), 0o644))
		}, false},
		{"workspace's subdirectory replaced by a link to its parent", "dir/f.txt", func(t *testing.T, ws, outside string) {
			require.NoError(t, os.Rename(filepath.Join(ws, "dir"), filepath.Join(ws, "dir.moved")))
			require.NoError(t, os.Symlink("..", filepath.Join(ws, "dir")))
		}, true},
	}
	for _, tt := range tests {
		for _, cmd := range []string{"str_replace", "create"} {
			t.Run(tt.name+"/"+cmd, func(t *testing.T) {
				outside := t.TempDir()
				writeFile(t, outside, "f.txt", "outside\n")
				e, ws := newTestEditor(t, EditorOptions{})
				writeFile(t, ws, "dir/f.txt", "inside\n")
				e.beforeWrite = func() { tt.swap(t, ws, outside) }
				args := map[string]any{"command": "str_replace", "path": tt.path, "old_str": "inside", "new_str": "edited"}
				if cmd == "create" {
					args = map[string]any{"command": "create", "path": tt.path, "file_text": "edited\n"}
				}
				res := edit(t, e, args)
				assert.Equal(t, "outside\n", readFile(t, outside, "f.txt"), "the outside file is untouched")
				assert.NoFileExists(t, filepath.Join(filepath.Dir(ws), "f.txt"))
				if tt.refused {
					require.True(t, res.Failed(), "must be refused, got %q", res.Output)
					assert.Contains(t, res.Error, "outside the workspace")
					return
				}
				require.False(t, res.Failed(), res.Error)
				fi, err := os.Lstat(filepath.Join(ws, tt.path))
				require.NoError(t, err)
				assert.True(t, fi.Mode().IsRegular(), "the name now holds a regular file of its own")
				assert.Equal(t, "edited\n", readFile(t, ws, tt.path))
			})
		}
	}
}

// TestEditorSymlinkedParents: a directory reached through a symbolic link
// that stays inside the workspace works; one that leads out is refused,
// for new files too; ".." may not climb out, however it is spelled.
func TestEditorSymlinkedParents(t *testing.T) {
	outside := t.TempDir()
	e, ws := newTestEditor(t, EditorOptions{})
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "real/sub"), 0o755))
	require.NoError(t, os.Symlink("real", filepath.Join(ws, "alias")))
	require.NoError(t, os.Symlink(outside, filepath.Join(ws, "out")))
	require.NoError(t, os.Symlink("real/../..", filepath.Join(ws, "up")))

	res := edit(t, e, map[string]any{"command": "create", "path": "alias/sub/f.txt", "file_text": "hi\n"})
	require.False(t, res.Failed(), res.Error)
	assert.Equal(t, "hi\n", readFile(t, ws, "real/sub/f.txt"))

	for _, p := range []string{"out/f.txt", "out/new/f.txt", "up/f.txt", "alias/../../f.txt", "real/sub/../../../f.txt", "./../f.txt"} {
		res := edit(t, e, map[string]any{"command": "create", "path": p, "file_text": "x\n"})
		require.True(t, res.Failed(), "%s must be refused, got %q", p, res.Output)
		assert.Contains(t, res.Error, "outside the workspace", p)
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was written outside")
	_, err = os.Stat(filepath.Join(filepath.Dir(ws), "f.txt"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "nothing was written next to the workspace")
}
