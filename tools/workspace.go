package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// errOutsideWorkspace marks paths that leave the workspace.
var errOutsideWorkspace = errors.New("outside the workspace")

// workspace confines paths to one directory.
//
// Confinement has two layers. rel gives clear messages for the common
// mistakes (absolute paths elsewhere, "..", a symbolic link pointing out)
// by checking the path lexically and resolving its deepest existing
// ancestor with filepath.EvalSymlinks. The file operations themselves then
// go through an os.Root opened on the directory, which resolves every
// component race-free and refuses anything leaving the root, so a symlink
// swapped in between the check and the operation gains nothing.
type workspace struct {
	dir   string // absolute, symbolic links resolved
	given string // absolute form of the directory as configured
}

func newWorkspace(dir string) (*workspace, error) {
	if dir == "" {
		return nil, errors.New("tools: a workspace directory is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("tools: workspace %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("tools: workspace %q: %w (create the directory first)", dir, err)
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("tools: workspace %q: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("tools: workspace %q is not a directory", dir)
	}
	return &workspace{dir: real, given: abs}, nil
}

// open opens the workspace root for one operation. Opening per operation
// keeps tools free of a Close method and follows the directory if it is
// replaced.
func (w *workspace) open() (*os.Root, error) {
	r, err := os.OpenRoot(w.dir)
	if err != nil {
		return nil, fmt.Errorf("opening the workspace %s: %w", w.dir, err)
	}
	return r, nil
}

// rel turns a path the model gave into a clean path relative to the
// workspace, or explains why it is refused. "." is the workspace itself.
func (w *workspace) rel(p string) (string, error) {
	if p == "" {
		return "", errors.New("path is empty")
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	var rel string
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		r, ok := within(w.dir, c)
		if !ok {
			r, ok = within(w.given, c)
		}
		if !ok {
			return "", fmt.Errorf("path %q is %w (%s); use a path relative to the workspace", p, errOutsideWorkspace, w.dir)
		}
		rel = r
	} else {
		rel = filepath.Clean(p)
		if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("path %q is %w: \"..\" may not leave the workspace", p, errOutsideWorkspace)
		}
	}
	if err := w.checkLinks(p, rel); err != nil {
		return "", err
	}
	return rel, nil
}

// within reports whether p lies in base, and returns p relative to base.
func within(base, p string) (string, bool) {
	r, err := filepath.Rel(base, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", false
	}
	return r, true
}

// checkLinks resolves the deepest existing ancestor of rel (rel itself when
// it exists) and refuses the path if that leads out of the workspace — this
// catches a symlink inside the workspace pointing out, including for a file
// that does not exist yet under a symlinked directory. Paths it cannot
// resolve (a dangling link) are left to os.Root, which refuses escapes.
func (w *workspace) checkLinks(given, rel string) error {
	cur := filepath.Join(w.dir, rel)
	for cur != w.dir {
		_, err := os.Lstat(cur)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil // e.g. a file used as a directory; the operation reports it
		}
		cur = filepath.Dir(cur)
	}
	real, err := filepath.EvalSymlinks(cur)
	if err != nil {
		return nil
	}
	if _, ok := within(w.dir, real); !ok {
		return fmt.Errorf("path %q is %w: it goes through a symbolic link to %s", given, errOutsideWorkspace, real)
	}
	return nil
}

// display is how a workspace-relative path is shown to the model.
func display(rel string) string {
	if rel == "." {
		return "the workspace root"
	}
	return filepath.ToSlash(rel)
}

// describeFSError turns an error from a file operation on rel into a
// message for the model.
func describeFSError(rel string, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s does not exist", display(rel))
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("permission denied for %s", display(rel))
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if pe.Err.Error() == "path escapes from parent" {
			return fmt.Sprintf("path %q is outside the workspace (a symbolic link or \"..\" leads out of it)", display(rel))
		}
		return fmt.Sprintf("%s: %v", display(rel), pe.Err)
	}
	return fmt.Sprintf("%s: %v", display(rel), err)
}
