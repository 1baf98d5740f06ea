package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepgraph/deepgraph/internal/atomicfile"
	"github.com/deepgraph/deepgraph/schemas"
)

// EditorOptions configure the str_replace_editor tool. Zero values take the
// defaults named on each field.
type EditorOptions struct {
	// Workspace is the directory the tool is confined to. Required; it must
	// exist.
	Workspace string
	// MaxViewBytes caps the text a view returns (default 16000, like
	// OpenManus); longer output is cut at a line boundary with a note saying
	// how to see the rest.
	MaxViewBytes int
	// MaxFileBytes is the largest file the tool reads or writes whole
	// (default 4 MiB).
	MaxFileBytes int64
	// MaxListEntries caps a directory listing (default 1000).
	MaxListEntries int
	// MaxHistory is how many edits per file undo_edit can revert (default 10).
	MaxHistory int
	// MaxHistoryBytes bounds the memory the undo history holds over all
	// files (default 64 MiB); the oldest entries are dropped first.
	MaxHistoryBytes int64
}

// Editor defaults.
const (
	DefaultMaxViewBytes    = 16000
	DefaultMaxFileBytes    = 4 << 20
	DefaultMaxListEntries  = 1000
	DefaultMaxHistory      = 10
	DefaultMaxHistoryBytes = 64 << 20
)

const editorDescription = `View, create and edit files in the workspace. Commands:
- view: show a file with line numbers (view_range [start, end] limits it to those 1-based lines, end -1 meaning the last line), or list a directory two levels deep (hidden entries excluded). Images are returned as images.
- create: write file_text to path, creating parent directories; an existing file is replaced (undo_edit restores it).
- str_replace: replace old_str with new_str (omitted or empty new_str deletes old_str). old_str must match the file exactly, whitespace and indentation included, and occur exactly once; include surrounding lines to make it unique.
- insert: insert new_str after line insert_line (0 inserts at the top of the file).
- undo_edit: revert the last create, str_replace or insert on path.
Paths are relative to the workspace root; paths leading outside it are refused.`

type editorArgs struct {
	Command    string  `json:"command" jsonschema:"The command to run: view, create, str_replace, insert or undo_edit."`
	Path       string  `json:"path" jsonschema:"File or directory path, relative to the workspace root."`
	FileText   *string `json:"file_text,omitempty" jsonschema:"create: the full content of the file."`
	OldStr     *string `json:"old_str,omitempty" jsonschema:"str_replace: the exact text to replace; it must occur exactly once."`
	NewStr     *string `json:"new_str,omitempty" jsonschema:"str_replace: the replacement text (empty deletes old_str). insert: the text to insert."`
	InsertLine *int    `json:"insert_line,omitempty" jsonschema:"insert: the line after which new_str goes; 0 inserts at the top."`
	ViewRange  []int   `json:"view_range,omitempty" jsonschema:"view: [start, end] 1-based line range of a file; end -1 means through the last line."`
}

func (editorArgs) ExtendSchema(s *jsonschema.Schema) {
	s.Properties["command"].Enum = []any{"view", "create", "str_replace", "insert", "undo_edit"}
	s.Properties["insert_line"].Minimum = jsonschema.Ptr(0.0)
	vr := s.Properties["view_range"]
	vr.MinItems, vr.MaxItems = jsonschema.Ptr(2), jsonschema.Ptr(2)
}

// Editor is the str_replace_editor tool: view, create, str_replace, insert
// and undo_edit on files inside a workspace directory. One tool with a
// command parameter (rather than five tools) because that is the shape
// models are trained on (Anthropic's text editor tool, OpenManus, SWE-agent)
// and because the undo history is shared by the commands.
//
// Edits made by other means (the bash tool, another program) are not in the
// undo history; undo_edit restores the content this tool saw before its own
// last edit.
type Editor struct {
	tool *FuncTool[editorArgs]
	ws   *workspace
	opts EditorOptions

	// lock (capacity 1) serialises commands, as edits are
	// read-modify-write; a command waiting for it gives up when its
	// context ends.
	lock    chan struct{}
	history map[string][]editorSnapshot
	seq     uint64
	bytes   int64

	// beforeWrite, when set, runs between the checks of a write and the
	// write itself: tests swap the path there.
	beforeWrite func()
}

// editorSnapshot is a file's state before an edit.
type editorSnapshot struct {
	seq     uint64
	existed bool
	content []byte
	mode    fs.FileMode
}

// NewEditor returns the str_replace_editor tool confined to opts.Workspace.
func NewEditor(opts EditorOptions) (*Editor, error) {
	ws, err := newWorkspace(opts.Workspace)
	if err != nil {
		return nil, err
	}
	if opts.MaxViewBytes <= 0 {
		opts.MaxViewBytes = DefaultMaxViewBytes
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.MaxListEntries <= 0 {
		opts.MaxListEntries = DefaultMaxListEntries
	}
	if opts.MaxHistory <= 0 {
		opts.MaxHistory = DefaultMaxHistory
	}
	if opts.MaxHistoryBytes <= 0 {
		opts.MaxHistoryBytes = DefaultMaxHistoryBytes
	}
	e := &Editor{ws: ws, opts: opts, lock: make(chan struct{}, 1), history: make(map[string][]editorSnapshot)}
	e.tool, err = Func(EditorName, editorDescription, e.run)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Name implements Tool.
func (e *Editor) Name() string { return e.tool.Name() }

// Description implements Tool.
func (e *Editor) Description() string { return e.tool.Description() }

// Parameters implements Tool.
func (e *Editor) Parameters() *jsonschema.Schema { return e.tool.Parameters() }

// Run implements Tool.
func (e *Editor) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	return e.tool.Run(ctx, args)
}

// Workspace is the absolute, symlink-resolved workspace directory.
func (e *Editor) Workspace() string { return e.ws.dir }

func (e *Editor) run(ctx context.Context, a editorArgs) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	rel, err := e.ws.rel(a.Path)
	if err != nil {
		return Failf("%v", err), nil
	}
	root, err := e.ws.open()
	if err != nil {
		return Result{}, err
	}
	defer root.Close()

	select {
	case e.lock <- struct{}{}:
		defer func() { <-e.lock }()
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	switch a.Command {
	case "view":
		if a.FileText != nil || a.OldStr != nil || a.NewStr != nil || a.InsertLine != nil {
			return Failf("view takes only path and view_range"), nil
		}
		return e.view(ctx, root, rel, a.ViewRange), nil
	case "create":
		if a.FileText == nil {
			return Failf("create needs file_text (the full content of the file)"), nil
		}
		return e.create(root, rel, *a.FileText), nil
	case "str_replace":
		if a.OldStr == nil || *a.OldStr == "" {
			return Failf("str_replace needs a non-empty old_str"), nil
		}
		newStr := ""
		if a.NewStr != nil {
			newStr = *a.NewStr
		}
		return e.strReplace(root, rel, *a.OldStr, newStr), nil
	case "insert":
		if a.InsertLine == nil {
			return Failf("insert needs insert_line (0 inserts at the top of the file)"), nil
		}
		if a.NewStr == nil {
			return Failf("insert needs new_str (the text to insert)"), nil
		}
		return e.insert(root, rel, *a.InsertLine, *a.NewStr), nil
	case "undo_edit":
		return e.undo(root, rel), nil
	default: // the schema's enum makes this unreachable through Run
		return Failf("unknown command %q; use view, create, str_replace, insert or undo_edit", a.Command), nil
	}
}

// readFile reads a regular file for editing or viewing, within the size cap.
// A non-empty message says why it cannot.
//
// Anything but a regular file is refused before it is opened: opening a
// named pipe blocks until a writer comes, and opening a device can have
// effects of its own. The file is then opened non-blocking and checked
// again, in case it was replaced in between — and refused if it has more
// than one hard link (another of its names may be outside the workspace).
func (e *Editor) readFile(root *os.Root, rel string) ([]byte, fs.FileInfo, string) {
	if info, err := root.Stat(rel); err != nil {
		return nil, nil, describeFSError(rel, err)
	} else if msg := irregular(rel, info); msg != "" {
		return nil, info, msg
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, nil, describeFSError(rel, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, describeFSError(rel, err)
	}
	if msg := irregular(rel, info); msg != "" {
		return nil, info, msg
	}
	if msg := hardLinked(rel, info); msg != "" {
		return nil, info, msg
	}
	if info.Size() > e.opts.MaxFileBytes {
		return nil, info, fmt.Sprintf("%s is %d bytes, more than the %d bytes this tool handles", display(rel), info.Size(), e.opts.MaxFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, e.opts.MaxFileBytes+1))
	if err != nil {
		return nil, info, describeFSError(rel, err)
	}
	if int64(len(data)) > e.opts.MaxFileBytes {
		return nil, info, fmt.Sprintf("%s is more than the %d bytes this tool handles", display(rel), e.opts.MaxFileBytes)
	}
	return data, info, ""
}

// irregular says why info, the file at rel, is not one this tool reads or
// writes; "" for a regular file.
func irregular(rel string, info fs.FileInfo) string {
	m := info.Mode()
	var what string
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return fmt.Sprintf("%s is a directory", display(rel))
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	default:
		what = "a special file"
	}
	return fmt.Sprintf("%s is %s, not a regular file; this tool reads and writes regular files only", display(rel), what)
}

// readText is readFile for files that must be text.
func (e *Editor) readText(root *os.Root, rel string) (string, fs.FileInfo, string) {
	data, info, msg := e.readFile(root, rel)
	if msg != "" {
		return "", info, msg
	}
	if isBinary(data) {
		return "", info, fmt.Sprintf("%s is a binary file (%d bytes); this tool edits text files only", display(rel), len(data))
	}
	return string(data), info, ""
}

func isBinary(data []byte) bool {
	head := data[:min(len(data), 8192)]
	return bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(data)
}

var imageExts = map[string]bool{".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true}

func (e *Editor) view(ctx context.Context, root *os.Root, rel string, viewRange []int) Result {
	info, err := root.Stat(rel)
	if err != nil {
		return Failf("%s", describeFSError(rel, err))
	}
	if info.IsDir() {
		if viewRange != nil {
			return Failf("view_range applies to files; %s is a directory", display(rel))
		}
		return e.list(ctx, root, rel)
	}
	data, _, msg := e.readFile(root, rel)
	if msg != "" {
		return Failf("%s", msg)
	}
	if isBinary(data) {
		if imageExts[strings.ToLower(filepath.Ext(rel))] {
			if mt := http.DetectContentType(data); strings.HasPrefix(mt, "image/") {
				return Result{
					Output: fmt.Sprintf("%s: %s image, %d bytes (attached)", display(rel), mt, len(data)),
					Images: []schemas.Image{{MIMEType: mt, Data: data}},
				}
			}
		}
		return Failf("%s is a binary file (%d bytes); view shows text files and images only", display(rel), len(data))
	}
	lines := splitLines(string(data))
	if len(lines) == 0 {
		if viewRange != nil {
			return Failf("%s is empty; view it without view_range", display(rel))
		}
		return Text(fmt.Sprintf("%s is empty", display(rel)))
	}
	start, end := 1, len(lines)
	if viewRange != nil {
		start, end = viewRange[0], viewRange[1]
		if start < 1 || start > len(lines) {
			return Failf("view_range start %d is out of range: %s has %d lines", start, display(rel), len(lines))
		}
		if end == -1 || end > len(lines) {
			end = len(lines)
		}
		if end < start {
			return Failf("view_range end %d is before start %d (use -1 for the last line)", end, start)
		}
	}
	var b strings.Builder
	header := fmt.Sprintf("%s (lines %d-%d of %d):\n", display(rel), start, end, len(lines))
	b.WriteString(header)
	for n := start; n <= end; n++ {
		line := fmt.Sprintf("%6d\t%s\n", n, strings.TrimSuffix(lines[n-1], "\r"))
		if b.Len()+len(line) > e.opts.MaxViewBytes && n > start {
			fmt.Fprintf(&b, "[output cut at line %d of %d to stay under %d bytes; view the rest with view_range [%d, %d]]\n",
				n-1, len(lines), e.opts.MaxViewBytes, n, end)
			break
		}
		if b.Len()+len(line) > e.opts.MaxViewBytes { // a single overlong line
			b.WriteString(truncateText(line, e.opts.MaxViewBytes-b.Len()))
			b.WriteString("\n")
			if n < end {
				fmt.Fprintf(&b, "[output cut; view the rest with view_range [%d, %d]]\n", n+1, end)
			}
			break
		}
		b.WriteString(line)
	}
	return Text(b.String())
}

// splitLines splits text into lines; a final newline does not start a new
// line, and empty text has none.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

func (e *Editor) list(ctx context.Context, root *os.Root, rel string) Result {
	var entries []string
	more := false
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := root.Open(dir)
		if err != nil {
			return err
		}
		des, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return err
		}
		slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, de := range des {
			if strings.HasPrefix(de.Name(), ".") {
				continue
			}
			if len(entries) >= e.opts.MaxListEntries {
				more = true
				return nil
			}
			p := filepath.Join(dir, de.Name())
			shown := filepath.ToSlash(p)
			switch {
			case de.IsDir():
				entries = append(entries, shown+"/")
				if depth < 2 {
					if err := walk(p, depth+1); err != nil && !errors.Is(err, fs.ErrPermission) {
						return err
					}
				}
			case de.Type()&fs.ModeSymlink != 0:
				entries = append(entries, shown+"@")
			default:
				entries = append(entries, shown)
			}
		}
		return nil
	}
	if err := walk(rel, 1); err != nil {
		return Failf("%s", describeFSError(rel, err))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Files and directories up to 2 levels deep in %s (hidden entries excluded; '/' marks directories, '@' symbolic links):\n", display(rel))
	if len(entries) == 0 {
		b.WriteString("(empty)\n")
	}
	for _, s := range entries {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	if more {
		fmt.Fprintf(&b, "[listing cut at %d entries; view a subdirectory to see more]\n", e.opts.MaxListEntries)
	}
	return Text(b.String())
}

// snapshot records rel's current state for undo. It returns a message when
// the file cannot be edited.
func (e *Editor) snapshot(root *os.Root, rel string) (editorSnapshot, string) {
	info, err := root.Stat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return editorSnapshot{existed: false}, ""
	}
	if err != nil {
		return editorSnapshot{}, describeFSError(rel, err)
	}
	if info.IsDir() {
		return editorSnapshot{}, fmt.Sprintf("%s is a directory", display(rel))
	}
	data, _, msg := e.readFile(root, rel)
	if msg != "" {
		return editorSnapshot{}, msg
	}
	return editorSnapshot{existed: true, content: data, mode: info.Mode().Perm()}, ""
}

// remember pushes snap onto rel's history, keeping the depth and memory
// bounds.
func (e *Editor) remember(rel string, snap editorSnapshot) {
	e.seq++
	snap.seq = e.seq
	h := append(e.history[rel], snap)
	e.bytes += int64(len(snap.content))
	if len(h) > e.opts.MaxHistory {
		e.bytes -= int64(len(h[0].content))
		h = slices.Delete(h, 0, 1)
	}
	e.history[rel] = h
	for e.bytes > e.opts.MaxHistoryBytes {
		oldest, oldestSeq := "", uint64(0)
		for p, hs := range e.history {
			if len(hs) > 0 && (oldest == "" || hs[0].seq < oldestSeq) {
				oldest, oldestSeq = p, hs[0].seq
			}
		}
		if oldest == "" {
			break
		}
		hs := e.history[oldest]
		e.bytes -= int64(len(hs[0].content))
		if len(hs) == 1 {
			delete(e.history, oldest)
		} else {
			e.history[oldest] = slices.Delete(hs, 0, 1)
		}
	}
}

// write stores content at rel, creating parent directories. It never
// writes a file in place: a new file, made in the same directory with
// permissions perm (0644 for a new file), is renamed over the old one
// (atomicfile.WriteIn), so a hard link or a symbolic link swapped in at rel
// after the checks is replaced, not written through, and a reader never
// sees half a file. rel's directory is resolved by the os.Root, race-free;
// a symbolic link at rel that stays inside the workspace is followed (the
// file it leads to is replaced), one that leads out is refused. A file with
// more than one hard link, a directory and a special file are refused.
func (e *Editor) write(root *os.Root, rel, content string, perm fs.FileMode) string {
	if int64(len(content)) > e.opts.MaxFileBytes {
		return fmt.Sprintf("the new content of %s would be %d bytes, more than the %d bytes this tool handles", display(rel), len(content), e.opts.MaxFileBytes)
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return describeFSError(dir, err)
		}
	}
	target, msg := e.writeTarget(root, rel)
	if msg != "" {
		return msg
	}
	old, err := root.Lstat(target)
	switch {
	case err == nil:
		if msg := irregular(rel, old); msg != "" {
			return msg
		}
		if msg := hardLinked(rel, old); msg != "" {
			return msg
		}
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	default:
		return describeFSError(rel, err)
	}
	if perm == 0 {
		perm = 0o644
	}
	if e.beforeWrite != nil {
		e.beforeWrite()
	}
	if err := atomicfile.WriteIn(root, target, []byte(content), perm); err != nil {
		return describeFSError(rel, err)
	}
	keepOwner(root, target, old)
	return ""
}

// writeTarget is where a write to rel goes: rel, or — when rel is a
// symbolic link — the file it leads to, which must be in the workspace.
func (e *Editor) writeTarget(root *os.Root, rel string) (string, string) {
	info, err := root.Lstat(rel)
	if err != nil || info.Mode()&fs.ModeSymlink == 0 {
		return rel, ""
	}
	real, err := filepath.EvalSymlinks(filepath.Join(e.ws.dir, rel))
	if err != nil {
		dest, _ := root.Readlink(rel)
		return "", fmt.Sprintf("%s is a symbolic link to %s, which does not exist; create %s itself, or remove the link first", display(rel), dest, dest)
	}
	r, ok := within(e.ws.dir, real)
	if !ok {
		return "", fmt.Sprintf("path %q is %v: it is a symbolic link to %s", display(rel), errOutsideWorkspace, real)
	}
	return r, ""
}

// hardLinked says why a file with more than one hard link is refused; ""
// for one with a single link.
func hardLinked(rel string, info fs.FileInfo) string {
	n := linkCount(info)
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf("%s has %d hard links: another name of the same file may be outside the workspace, "+
		"so this tool neither reads nor changes it; work on a copy with another name", display(rel), n)
}

func (e *Editor) create(root *os.Root, rel, text string) Result {
	if rel == "." {
		return Failf("create needs a file path, not the workspace root")
	}
	snap, msg := e.snapshot(root, rel)
	if msg != "" {
		return Failf("%s", msg)
	}
	if msg := e.write(root, rel, text, snap.mode); msg != "" {
		return Failf("%s", msg)
	}
	e.remember(rel, snap)
	n := len(splitLines(text))
	if snap.existed {
		return Text(fmt.Sprintf("Replaced the content of %s (%s); undo_edit restores the previous version.", display(rel), plural(n, "line")))
	}
	return Text(fmt.Sprintf("Created %s (%s).", display(rel), plural(n, "line")))
}

func (e *Editor) strReplace(root *os.Root, rel, oldStr, newStr string) Result {
	content, info, msg := e.readText(root, rel)
	if msg != "" {
		return Failf("%s", msg)
	}
	first := strings.Index(content, oldStr)
	if first < 0 {
		hint := ""
		if strings.Contains(content, strings.TrimSpace(oldStr)) {
			hint = " (it does occur with different leading or trailing whitespace)"
		}
		return Failf("old_str was not found in %s%s; nothing changed. It must match the file exactly, whitespace and indentation included: view the file and copy the text.", display(rel), hint)
	}
	var at []int
	for i := first; i >= 0; {
		at = append(at, lineOf(content, i))
		next := strings.Index(content[i+1:], oldStr)
		if next < 0 {
			break
		}
		i += 1 + next
	}
	if len(at) > 1 {
		shown := at
		suffix := ""
		if len(shown) > 10 {
			shown, suffix = shown[:10], ", …"
		}
		return Failf("old_str occurs %d times in %s (starting on lines %s%s); nothing changed. Include more surrounding lines so that it occurs exactly once.",
			len(at), display(rel), joinInts(shown), suffix)
	}
	updated := content[:first] + newStr + content[first+len(oldStr):]
	snap := editorSnapshot{existed: true, content: []byte(content), mode: info.Mode().Perm()}
	if msg := e.write(root, rel, updated, snap.mode); msg != "" {
		return Failf("%s", msg)
	}
	e.remember(rel, snap)
	startLine := lineOf(updated, first)
	endLine := startLine + strings.Count(newStr, "\n")
	return Text(fmt.Sprintf("Edited %s. The changed region now reads:\n%sCheck the edit; undo_edit reverts it.",
		display(rel), truncateText(numbered(updated, startLine-4, endLine+4), e.opts.MaxViewBytes)))
}

func (e *Editor) insert(root *os.Root, rel string, after int, text string) Result {
	content, info, msg := e.readText(root, rel)
	if msg != "" {
		return Failf("%s", msg)
	}
	lines := splitLines(content)
	if after < 0 || after > len(lines) {
		return Failf("insert_line %d is out of range: %s has %d lines (use 0 to %d)", after, display(rel), len(lines), len(lines))
	}
	off := 0
	for i := 0; i < after; i++ {
		off += len(lines[i]) + 1
	}
	ins := strings.TrimSuffix(text, "\n") + "\n"
	if off > len(content) { // after the last line of a file without a final newline
		off = len(content)
		ins = "\n" + strings.TrimSuffix(ins, "\n")
	}
	updated := content[:off] + ins + content[off:]
	snap := editorSnapshot{existed: true, content: []byte(content), mode: info.Mode().Perm()}
	if msg := e.write(root, rel, updated, snap.mode); msg != "" {
		return Failf("%s", msg)
	}
	e.remember(rel, snap)
	added := len(splitLines(strings.TrimSuffix(text, "\n") + "\n"))
	return Text(fmt.Sprintf("Inserted %d lines after line %d of %s. The region now reads:\n%sCheck the edit; undo_edit reverts it.",
		added, after, display(rel), truncateText(numbered(updated, after-3, after+added+4), e.opts.MaxViewBytes)))
}

func (e *Editor) undo(root *os.Root, rel string) Result {
	h := e.history[rel]
	if len(h) == 0 {
		return Failf("there is no edit of %s to undo (only edits made with this tool in this session can be undone)", display(rel))
	}
	snap := h[len(h)-1]
	if snap.existed {
		if msg := e.write(root, rel, string(snap.content), snap.mode); msg != "" {
			return Failf("%s", msg)
		}
	} else if err := root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Failf("%s", describeFSError(rel, err))
	}
	e.bytes -= int64(len(snap.content))
	if len(h) == 1 {
		delete(e.history, rel)
	} else {
		e.history[rel] = h[:len(h)-1]
	}
	if !snap.existed {
		return Text(fmt.Sprintf("Undid the creation of %s: the file was removed.", display(rel)))
	}
	lines := splitLines(string(snap.content))
	return Text(fmt.Sprintf("Undid the last edit of %s; it has %d lines again.", display(rel), len(lines)))
}

// lineOf is the 1-based line of byte offset off in text.
func lineOf(text string, off int) int { return strings.Count(text[:off], "\n") + 1 }

// numbered renders lines from..to (1-based, clamped) of text with numbers.
func numbered(text string, from, to int) string {
	lines := splitLines(text)
	from = max(from, 1)
	to = min(to, len(lines))
	var b strings.Builder
	for n := from; n <= to; n++ {
		fmt.Fprintf(&b, "%6d\t%s\n", n, strings.TrimSuffix(lines[n-1], "\r"))
	}
	return b.String()
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ", ")
}

// plural writes "1 line", "2 lines".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
