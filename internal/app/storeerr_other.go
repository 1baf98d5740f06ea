//go:build !unix

package app

import "os"

// freeBytes is the space left on the file system holding dir: unknown
// (-1) here.
func freeBytes(string) int64 { return -1 }

// writable reports whether dir can be written, as far as its mode says.
func writable(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.Mode().Perm()&0o200 != 0
}
