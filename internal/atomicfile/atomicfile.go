// Package atomicfile writes a file whole or not at all: to a temporary file
// in the same directory, renamed over the destination, so that a reader or
// a crash never sees half a file.
package atomicfile

import (
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
