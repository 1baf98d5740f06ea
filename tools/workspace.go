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

// ErrUnsafeWorkspace is returned (wrapped, with the reason) for a workspace
// the file and exec tools must not be confined to, because it holds far
// more than a task's files: a file-system root, a system directory, or the
// user's home directory itself. See CheckWorkspace.
var ErrUnsafeWorkspace = errors.New("tools: unsafe workspace")

// systemTrees are directories that are refused with everything under them:
// the system's programs, libraries, configuration and kernel interfaces.
var systemTrees = []string{
	"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/boot", "/dev", "/proc", "/sys", "/run",
	"/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libexec", "/usr/include", "/usr/share",
	"/System", "/Library", "/private/etc", "/private/var/db",
}

// systemTops are directories that are refused themselves, though projects
// may live below them (/var/www/site, /usr/local/src/x, /home/ann/notes).
var systemTops = []string{
	"/usr", "/usr/local", "/var", "/opt", "/srv", "/home", "/Users", "/root", "/tmp", "/var/tmp", "/mnt", "/media",
	"/private", "/private/var", "/private/tmp", "/snap", "/nix",
}

// WorkspaceError is the error of CheckWorkspace: Dir may not be a
// workspace because of What it is. It matches ErrUnsafeWorkspace.
type WorkspaceError struct {
	Dir  string // as given
	What string // "a file-system root", "your home directory", "a system directory", "a directory in /etc, a system directory"…
}

// Error says what Dir is, why that is refused and what to pass instead.
func (e *WorkspaceError) Error() string {
	return fmt.Sprintf("%v: %s is %s: the tools may create, change and, with code execution, run anything in it; "+
		"pass a project directory instead, such as a new directory for the task (mkdir ~/agent-work; --workspace ~/agent-work)",
		ErrUnsafeWorkspace, e.Dir, e.What)
}

// Unwrap returns ErrUnsafeWorkspace.
func (e *WorkspaceError) Unwrap() error { return ErrUnsafeWorkspace }

// CheckWorkspace reports whether dir may be a workspace. It refuses, with a
// *WorkspaceError (matching ErrUnsafeWorkspace) that says why and what to
// pass instead: a file-system root; the system directories (/etc, /usr/bin,
// /boot, /dev, /proc, /sys, /lib… and everything under them); the top
// directories that hold everyone's files (/usr, /var, /home, /tmp, /opt…,
// though their subdirectories are fine); and the user's home directory
// itself (its subdirectories are fine). dir is checked both as given and
// with symbolic links resolved. NewEditor, NewPythonExecute and NewBash
// call it.
func CheckWorkspace(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("tools: workspace %q: %w", dir, err)
	}
	paths := []string{filepath.Clean(abs)}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != paths[0] {
		paths = append(paths, real)
	}
	home := ""
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		home = filepath.Clean(h)
	}
	for _, p := range paths {
		var what string
		switch {
		case filepath.Dir(p) == p:
			what = "a file-system root"
		case home != "" && (p == home || sameFile(p, home)):
			what = "your home directory"
		default:
			for _, top := range systemTops {
				if p == top {
					what = "a system directory that holds everyone's files"
				}
			}
			for _, tree := range systemTrees {
				if p == tree {
					what = "a system directory"
				} else if _, ok := within(tree, p); ok {
					what = fmt.Sprintf("a directory in %s, a system directory", tree)
				}
			}
		}
		if what != "" {
			shown := dir
			if p != filepath.Clean(abs) {
				shown = fmt.Sprintf("%s (%s)", dir, p)
			}
			return &WorkspaceError{Dir: shown, What: what}
		}
	}
	return nil
}

// sameFile reports whether a and b are the same existing directory.
func sameFile(a, b string) bool {
	ai, err := os.Stat(a)
	if err != nil {
		return false
	}
	bi, err := os.Stat(b)
	return err == nil && os.SameFile(ai, bi)
}

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
	if err := CheckWorkspace(dir); err != nil {
		return nil, err
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
