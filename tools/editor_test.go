package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestEditor(t *testing.T, opts EditorOptions) (*Editor, string) {
	t.Helper()
	if opts.Workspace == "" {
		opts.Workspace = t.TempDir()
	}
	e, err := NewEditor(opts)
	require.NoError(t, err)
	return e, e.Workspace()
}

// edit runs one editor command given as a Go value.
func edit(t *testing.T, e *Editor, args map[string]any) Result {
	t.Helper()
	b, err := json.Marshal(args)
	require.NoError(t, err)
	res, err := e.Run(context.Background(), b)
	require.NoError(t, err)
	return res
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	require.NoError(t, err)
	return string(b)
}

func TestEditorView(t *testing.T) {
	e, ws := newTestEditor(t, EditorOptions{})
	writeFile(t, ws, "a.txt", "one\ntwo\r\nthree\nfour\n")
	writeFile(t, ws, "empty.txt", "")
	writeFile(t, ws, "bin.dat", "ab\x00cd")
	writeFile(t, ws, "sub/deeper/x.go", "package x\n")
	writeFile(t, ws, "sub/deeper/deepest/hidden.go", "package y\n")
	writeFile(t, ws, ".git/config", "secret-ish")
	writeFile(t, ws, "sub/b.md", "# b\n")

	tests := []struct {
		name     string
		args     map[string]any
		want     []string
		notWant  []string
		wantFail string
	}{
		{name: "whole file", args: map[string]any{"path": "a.txt"},
			want: []string{"a.txt (lines 1-4 of 4):", "     1\tone\n", "     2\ttwo\n", "     4\tfour\n"}, notWant: []string{"\r"}},
		{name: "range", args: map[string]any{"path": "a.txt", "view_range": []int{2, 3}},
			want: []string{"lines 2-3 of 4", "     2\ttwo", "     3\tthree"}, notWant: []string{"\tone", "\tfour"}},
		{name: "range to end", args: map[string]any{"path": "a.txt", "view_range": []int{3, -1}},
			want: []string{"lines 3-4 of 4"}},
		{name: "end beyond file is clamped", args: map[string]any{"path": "a.txt", "view_range": []int{3, 99}},
			want: []string{"lines 3-4 of 4"}},
		{name: "start out of range", args: map[string]any{"path": "a.txt", "view_range": []int{5, 6}}, wantFail: "start 5 is out of range: a.txt has 4 lines"},
		{name: "end before start", args: map[string]any{"path": "a.txt", "view_range": []int{3, 2}}, wantFail: "end 2 is before start 3"},
		{name: "range needs two numbers", args: map[string]any{"path": "a.txt", "view_range": []int{3}}, wantFail: "view_range"},
		{name: "absolute path inside", args: map[string]any{"path": filepath.Join(ws, "a.txt")}, want: []string{"     1\tone"}},
		{name: "empty file", args: map[string]any{"path": "empty.txt"}, want: []string{"empty.txt is empty"}},
		{name: "binary", args: map[string]any{"path": "bin.dat"}, wantFail: "binary file"},
		{name: "missing", args: map[string]any{"path": "nope.txt"}, wantFail: "nope.txt does not exist"},
		{name: "directory", args: map[string]any{"path": "."},
			want:    []string{"a.txt\n", "sub/\n", "sub/b.md\n", "sub/deeper/\n"},
			notWant: []string{".git", "x.go", "deepest/"}}, // two levels deep (like find -maxdepth 2), no hidden entries
		{name: "subdirectory", args: map[string]any{"path": "sub"},
			want: []string{"sub/b.md\n", "sub/deeper/deepest/\n"}, notWant: []string{"hidden.go"}},
		{name: "directory with range", args: map[string]any{"path": "sub", "view_range": []int{1, 2}}, wantFail: "view_range applies to files"},
		{name: "stray parameter", args: map[string]any{"path": "a.txt", "old_str": "x"}, wantFail: "view takes only path and view_range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"command": "view"}
			for k, v := range tt.args {
				args[k] = v
			}
			res := edit(t, e, args)
			if tt.wantFail != "" {
				require.True(t, res.Failed(), res.Output)
				assert.Contains(t, res.Error, tt.wantFail)
				return
			}
			require.False(t, res.Failed(), res.Error)
			for _, w := range tt.want {
				assert.Contains(t, res.Output, w)
			}
			for _, w := range tt.notWant {
				assert.NotContains(t, res.Output, w)
			}
		})
	}
}

func TestEditorViewCaps(t *testing.T) {
	e, ws := newTestEditor(t, EditorOptions{MaxViewBytes: 200, MaxFileBytes: 5000, MaxListEntries: 3})
	var b strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	writeFile(t, ws, "long.txt", b.String())
	res := edit(t, e, map[string]any{"command": "view", "path": "long.txt"})
	require.False(t, res.Failed(), res.Error)
	assert.LessOrEqual(t, len(res.Output), 200+150, "capped (plus the note)")
	assert.Contains(t, res.Output, "view the rest with view_range")

	writeFile(t, ws, "oneline.txt", strings.Repeat("x", 1000))
	res = edit(t, e, map[string]any{"command": "view", "path": "oneline.txt"})
	require.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, "truncated")
	assert.Less(t, len(res.Output), 400)

	writeFile(t, ws, "huge.txt", strings.Repeat("y", 6000))
	res = edit(t, e, map[string]any{"command": "view", "path": "huge.txt"})
	assert.Contains(t, res.Error, "more than the 5000 bytes")

	for i := range 5 {
		writeFile(t, ws, fmt.Sprintf("d/f%d", i), "")
	}
	res = edit(t, e, map[string]any{"command": "view", "path": "d"})
	require.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, "listing cut at 3 entries")
	assert.NotContains(t, res.Output, "d/f3")
}

func TestEditorViewImage(t *testing.T) {
	e, ws := newTestEditor(t, EditorOptions{})
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00")
	require.NoError(t, os.WriteFile(filepath.Join(ws, "pic.png"), png, 0o644))
	res := edit(t, e, map[string]any{"command": "view", "path": "pic.png"})
	require.False(t, res.Failed(), res.Error)
	require.Len(t, res.Images, 1)
	assert.Equal(t, "image/png", res.Images[0].MIMEType)
	assert.Equal(t, png, res.Images[0].Data)
}

func TestEditorCreateAndUndo(t *testing.T) {
	e, ws := newTestEditor(t, EditorOptions{})
	res := edit(t, e, map[string]any{"command": "create", "path": "new/dir/f.txt", "file_text": "a\nb\n"})
	require.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, "Created new/dir/f.txt (2 lines)")
	assert.Equal(t, "a\nb\n", readFile(t, ws, "new/dir/f.txt"))

	res = edit(t, e, map[string]any{"command": "create", "path": "new/dir/f.txt", "file_text": "c\n"})
	require.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, "Replaced")
	assert.Equal(t, "c\n", readFile(t, ws, "new/dir/f.txt"))

	res = edit(t, e, map[string]any{"command": "undo_edit", "path": "new/dir/f.txt"})
	require.False(t, res.Failed(), res.Error)
	assert.Equal(t, "a\nb\n", readFile(t, ws, "new/dir/f.txt"))

	res = edit(t, e, map[string]any{"command": "undo_edit", "path": "new/dir/f.txt"})
	require.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, "removed")
	assert.NoFileExists(t, filepath.Join(ws, "new/dir/f.txt"))

	res = edit(t, e, map[string]any{"command": "undo_edit", "path": "new/dir/f.txt"})
	assert.Contains(t, res.Error, "no edit of new/dir/f.txt to undo")

	res = edit(t, e, map[string]any{"command": "create", "path": "x.txt"})
	assert.Contains(t, res.Error, "create needs file_text")
	res = edit(t, e, map[string]any{"command": "create", "path": ".", "file_text": "x"})
	assert.Contains(t, res.Error, "not the workspace root")
	res = edit(t, e, map[string]any{"command": "create", "path": "new", "file_text": "x"})
	assert.Contains(t, res.Error, "new is a directory")
	res = edit(t, e, map[string]any{"command": "create", "path": "empty.txt", "file_text": ""})
	require.False(t, res.Failed(), res.Error)
	assert.Equal(t, "", readFile(t, ws, "empty.txt"))
}

func TestEditorKeepsFileMode(t *testing.T) {
	e, ws := newTestEditor(t, EditorOptions{})
	p := filepath.Join(ws, "run.sh")
	require.NoError(t, os.WriteFile(p, []byte("echo a\n"), 0o755))
	res := edit(t, e, map[string]any{"command": "str_replace", "path": "run.sh", "old_str": "a", "new_str": "b"})
	require.False(t, res.Failed(), res.Error)
	info, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), info.Mode().Perm())
}

func TestEditorStrReplace(t *testing.T) {
	const src = "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n"
	tests := []struct {
		name     string
		old, new any
		want     string
		wantOut  []string
		wantFail []string
	}{
		{name: "unique", old: "func a() {\n\treturn 1", new: "func a() {\n\treturn 2",
			want: strings.Replace(src, "return 1", "return 2", 1), wantOut: []string{"Edited f.go", "     2\t\treturn 2"}},
		{name: "delete with new_str omitted", old: "\nfunc b() {\n\treturn 1\n}\n",
			want: "func a() {\n\treturn 1\n}\n"},
		{name: "not found", old: "return 3", wantFail: []string{"old_str was not found in f.go", "nothing changed"}},
		{name: "whitespace hint", old: "  return 1", wantFail: []string{"different leading or trailing whitespace"}},
		{name: "ambiguous", old: "\treturn 1\n", new: "\treturn 9\n", wantFail: []string{"occurs 2 times in f.go", "lines 2, 6", "more surrounding lines"}},
		{name: "empty old_str", old: "", wantFail: []string{"non-empty old_str"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ws := newTestEditor(t, EditorOptions{})
			writeFile(t, ws, "f.go", src)
			args := map[string]any{"command": "str_replace", "path": "f.go", "old_str": tt.old}
			if tt.new != nil {
				args["new_str"] = tt.new
			}
			res := edit(t, e, args)
			if tt.wantFail != nil {
				require.True(t, res.Failed(), res.Output)
				for _, w := range tt.wantFail {
					assert.Contains(t, res.Error, w)
				}
				assert.Equal(t, src, readFile(t, ws, "f.go"), "a failed edit changes nothing")
				return
			}
			require.False(t, res.Failed(), res.Error)
			assert.Equal(t, tt.want, readFile(t, ws, "f.go"))
			for _, w := range tt.wantOut {
				assert.Contains(t, res.Output, w)
			}
			res = edit(t, e, map[string]any{"command": "undo_edit", "path": "f.go"})
			require.False(t, res.Failed(), res.Error)
			assert.Equal(t, src, readFile(t, ws, "f.go"))
		})
	}
}

func TestEditorOverlappingMatchIsAmbiguous(t *testing.T) {
	e, ws := newTestEditor(t, EditorOptions{})
	writeFile(t, ws, "f", "aaa")
	res := edit(t, e, map[string]any{"command": "str_replace", "path": "f", "old_str": "aa", "new_str": "b"})
	assert.Contains(t, res.Error, "occurs 2 times")
}

func TestEditorInsert(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		after    int
		text     string
		want     string
		wantFail string
	}{
		{name: "top", src: "a\nb\n", after: 0, text: "x", want: "x\na\nb\n"},
		{name: "middle", src: "a\nb\n", after: 1, text: "x\ny\n", want: "a\nx\ny\nb\n"},
		{name: "end", src: "a\nb\n", after: 2, text: "x", want: "a\nb\nx\n"},
		{name: "end without final newline", src: "a\nb", after: 2, text: "x", want: "a\nb\nx"},
		{name: "empty file", src: "", after: 0, text: "x", want: "x\n"},
		{name: "out of range", src: "a\n", after: 2, text: "x", wantFail: "insert_line 2 is out of range: f has 1 lines (use 0 to 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ws := newTestEditor(t, EditorOptions{})
			writeFile(t, ws, "f", tt.src)
			res := edit(t, e, map[string]any{"command": "insert", "path": "f", "insert_line": tt.after, "new_str": tt.text})
			if tt.wantFail != "" {
				assert.Contains(t, res.Error, tt.wantFail)
				assert.Equal(t, tt.src, readFile(t, ws, "f"))
				return
			}
			require.False(t, res.Failed(), res.Error)
			assert.Equal(t, tt.want, readFile(t, ws, "f"))
			res = edit(t, e, map[string]any{"command": "undo_edit", "path": "f"})
			require.False(t, res.Failed(), res.Error)
			assert.Equal(t, tt.src, readFile(t, ws, "f"))
		})
	}
	e, ws := newTestEditor(t, EditorOptions{})
	writeFile(t, ws, "f", "a\n")
	assert.Contains(t, edit(t, e, map[string]any{"command": "insert", "path": "f", "new_str": "x"}).Error, "insert needs insert_line")
	assert.Contains(t, edit(t, e, map[string]any{"command": "insert", "path": "f", "insert_line": 0}).Error, "insert needs new_str")
	assert.Contains(t, edit(t, e, map[string]any{"command": "insert", "path": "f", "insert_line": -1, "new_str": "x"}).Error, "minimum")
}

func TestEditorHistoryBounds(t *testing.T) {
	e, ws := newTestEditor(t, EditorOptions{MaxHistory: 2})
	writeFile(t, ws, "f", "0")
	for i := 1; i <= 4; i++ {
		res := edit(t, e, map[string]any{"command": "create", "path": "f", "file_text": fmt.Sprint(i)})
		require.False(t, res.Failed(), res.Error)
	}
	require.False(t, edit(t, e, map[string]any{"command": "undo_edit", "path": "f"}).Failed())
	require.False(t, edit(t, e, map[string]any{"command": "undo_edit", "path": "f"}).Failed())
	assert.Equal(t, "2", readFile(t, ws, "f"))
	assert.True(t, edit(t, e, map[string]any{"command": "undo_edit", "path": "f"}).Failed(), "only two edits are kept")

	// The memory bound drops the oldest entries across files.
	e, ws = newTestEditor(t, EditorOptions{MaxHistoryBytes: 10})
	writeFile(t, ws, "a", "aaaaaaaa") // 8 bytes
	writeFile(t, ws, "b", "bbbbbbbb")
	require.False(t, edit(t, e, map[string]any{"command": "create", "path": "a", "file_text": "A"}).Failed())
	require.False(t, edit(t, e, map[string]any{"command": "create", "path": "b", "file_text": "B"}).Failed())
	assert.True(t, edit(t, e, map[string]any{"command": "undo_edit", "path": "a"}).Failed(), "a's entry was evicted")
	require.False(t, edit(t, e, map[string]any{"command": "undo_edit", "path": "b"}).Failed())
	assert.Equal(t, "bbbbbbbb", readFile(t, ws, "b"))
}

func TestEditorWorkspaceConfinement(t *testing.T) {
	outside := t.TempDir()
	writeFile(t, outside, "secret.txt", "top secret\n")
	e, ws := newTestEditor(t, EditorOptions{})
	writeFile(t, ws, "ok.txt", "fine\n")
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "link_file")))
	require.NoError(t, os.Symlink(outside, filepath.Join(ws, "link_dir")))
	require.NoError(t, os.Symlink("ok.txt", filepath.Join(ws, "inside_link")))
	require.NoError(t, os.Symlink("../"+filepath.Base(outside), filepath.Join(ws, "rel_out")))

	escapes := []struct {
		name string
		args map[string]any
	}{
		{"dotdot view", map[string]any{"command": "view", "path": "../secret.txt"}},
		{"dotdot nested", map[string]any{"command": "view", "path": "a/../../secret.txt"}},
		{"dotdot create", map[string]any{"command": "create", "path": "../evil.txt", "file_text": "x"}},
		{"absolute outside", map[string]any{"command": "view", "path": filepath.Join(outside, "secret.txt")}},
		{"absolute system file", map[string]any{"command": "view", "path": "/etc/passwd"}},
		{"symlink file view", map[string]any{"command": "view", "path": "link_file"}},
		{"symlink file replace", map[string]any{"command": "str_replace", "path": "link_file", "old_str": "top", "new_str": "no"}},
		{"symlink file overwrite", map[string]any{"command": "create", "path": "link_file", "file_text": "x"}},
		{"symlink dir view", map[string]any{"command": "view", "path": "link_dir"}},
		{"symlink dir read", map[string]any{"command": "view", "path": "link_dir/secret.txt"}},
		{"symlink dir new file", map[string]any{"command": "create", "path": "link_dir/new.txt", "file_text": "x"}},
		{"symlink dir new nested file", map[string]any{"command": "create", "path": "link_dir/sub/new.txt", "file_text": "x"}},
		{"relative symlink out", map[string]any{"command": "view", "path": "rel_out/secret.txt"}},
		{"undo through link", map[string]any{"command": "undo_edit", "path": "link_dir/secret.txt"}},
	}
	for _, tt := range escapes {
		t.Run(tt.name, func(t *testing.T) {
			res := edit(t, e, tt.args)
			require.True(t, res.Failed(), "must be refused, got %q", res.Output)
			assert.Contains(t, res.Error, "outside the workspace")
			assert.NotContains(t, res.Output+res.Error, "top secret")
		})
	}
	assert.Equal(t, "top secret\n", readFile(t, outside, "secret.txt"), "the outside file is untouched")
	assert.NoFileExists(t, filepath.Join(outside, "new.txt"))
	assert.NoDirExists(t, filepath.Join(outside, "sub"))
	assert.NoFileExists(t, filepath.Join(filepath.Dir(ws), "evil.txt"))

	// Links that stay inside work.
	res := edit(t, e, map[string]any{"command": "view", "path": "inside_link"})
	require.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, "fine")
	res = edit(t, e, map[string]any{"command": "view", "path": "sub/../ok.txt"})
	require.False(t, res.Failed(), res.Error)
}

func TestEditorWorkspaceGivenThroughSymlink(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "ws")
	require.NoError(t, os.Symlink(real, link))
	writeFile(t, real, "f.txt", "hello\n")
	e, err := NewEditor(EditorOptions{Workspace: link})
	require.NoError(t, err)
	for _, p := range []string{filepath.Join(link, "f.txt"), filepath.Join(real, "f.txt"), "f.txt"} {
		res := edit(t, e, map[string]any{"command": "view", "path": p})
		require.False(t, res.Failed(), "%s: %s", p, res.Error)
		assert.Contains(t, res.Output, "hello")
	}
}

func TestNewEditorErrors(t *testing.T) {
	_, err := NewEditor(EditorOptions{})
	assert.ErrorContains(t, err, "workspace directory is required")
	_, err = NewEditor(EditorOptions{Workspace: filepath.Join(t.TempDir(), "missing")})
	assert.ErrorContains(t, err, "create the directory first")
	f := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(f, nil, 0o644))
	_, err = NewEditor(EditorOptions{Workspace: f})
	assert.ErrorContains(t, err, "not a directory")
}

func FuzzWorkspaceRel(f *testing.F) {
	for _, s := range []string{"a", "../a", "a/../../b", "/etc/passwd", ".", "a/./b", "..", "a\x00b", "//x", "a/b/../c"} {
		f.Add(s)
	}
	dir := f.TempDir()
	ws, err := newWorkspace(dir)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := ws.rel(p)
		if err != nil {
			return
		}
		full := filepath.Join(ws.dir, rel)
		_, inside := within(ws.dir, full)
		assert.True(t, inside, "%q resolved to %q outside the workspace", p, full)
	})
}
