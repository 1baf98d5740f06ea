package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Where the report goes is checked before any paid work: a run that can
// only fail to write its report is refused first (exit 2), and a write
// that still fails at the end (the disk filled up meanwhile) says where the
// report is kept.

// checkOut checks that the report can be written to --out FILE: its
// directory exists and takes a new file, and FILE, if it exists, is a file
// that can be written. Nothing is created or changed.
func checkOut(path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return usageErr("--out %s is a directory: give a file name, such as %s", path, filepath.Join(path, "report.md"))
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return usageErr("--out %s cannot be written: %v; choose another file", path, pathErr(err))
		}
		return f.Close()
	}
	return checkDir("--out "+path, filepath.Dir(path), false)
}

// checkDir checks that dir is a directory where new files can be written
// (or, with create, that it can be made); flag names the setting for the
// error.
func checkDir(flag, dir string, create bool) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && create:
		return nil // MkdirAll makes it; its error says why not
	case errors.Is(err, fs.ErrNotExist):
		return usageErr("%s: the directory %s does not exist: create it (mkdir -p %s) or choose another path", flag, dir, dir)
	case err != nil:
		return usageErr("%s: %v", flag, pathErr(err))
	case !st.IsDir():
		return usageErr("%s: %s is not a directory", flag, dir)
	}
	f, err := os.CreateTemp(dir, ".research-check-*")
	if err != nil {
		return usageErr("%s: cannot write in %s: %v; choose another directory", flag, dir, pathErr(err))
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

// pathErr is the reason of a file error without the operation and path,
// which the message around it says.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// output writes the report where it goes: --out FILE or stdout. A file that
// cannot be written says where the report is kept.
func (c *cli) output(data string) error {
	if c.out == "" {
		_, err := io.WriteString(c.stdout, data)
		return err
	}
	if err := os.WriteFile(c.out, []byte(data), 0o644); err != nil {
		err = fmt.Errorf("writing the report to %s: %v", c.out, pathErr(err))
		if c.runID != "" {
			err = fmt.Errorf("%w; the run is kept: research show %s prints its report", err, c.runID)
		}
		return err
	}
	return nil
}

// outputMarkdown writes a Markdown report (cleaned of control characters)
// where the report goes: rendered for the terminal when that is stdout —
// after a blank line that parts it from the timeline — and as written when
// piped, sent to a file, or with NO_COLOR set.
func (c *cli) outputMarkdown(md string) error {
	md = strings.TrimRight(cleanText(md), "\n") + "\n"
	if c.out == "" && c.stdoutTTY && !c.noColor {
		md = "\n" + renderMarkdown(md)
	}
	return c.output(md)
}
