// Package atomicfile writes a file whole or not at all: to a temporary file
// in the same directory, renamed over the destination, so that a reader or
// a crash never sees half a file, and the destination's name is replaced,
// never written through (a hard link or a symbolic link there keeps
// pointing at what it pointed at). WriteIn does the same inside an
// os.Root, for confined writes.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes data to path with permissions perm, atomically.
func Write(path string, data []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), perm)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// WriteIn writes data to name, relative to root, with permissions perm
// (exactly: the umask does not apply), atomically. name's directory is
// resolved once, by root, which refuses any way out of it (a symbolic link
// or ".." leading outside); the temporary file is made there, synced, and
// renamed over name's last element, which is replaced whatever it is — a
// file, a symbolic or hard link, a named pipe — but a directory.
func WriteIn(root *os.Root, name string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Split(filepath.Clean(name))
	if base == "" || base == "." || base == ".." {
		return &fs.PathError{Op: "write", Path: name, Err: fs.ErrInvalid}
	}
	r := root
	if dir != "" {
		sub, err := root.OpenRoot(dir)
		if err != nil {
			return err
		}
		defer sub.Close()
		r = sub
	}
	f, tmp, err := createTemp(r, base)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename(tmp, base)
	}
	if err != nil {
		_ = r.Remove(tmp)
		return err
	}
	return nil
}

// createTemp creates a new file named after base in r.
func createTemp(r *os.Root, base string) (*os.File, string, error) {
	for range 100 {
		b := make([]byte, 6)
		if _, err := rand.Read(b); err != nil {
			return nil, "", err
		}
		name := "." + base + "." + hex.EncodeToString(b) + ".tmp"
		f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", &fs.PathError{Op: "create", Path: base, Err: fs.ErrExist}
}
