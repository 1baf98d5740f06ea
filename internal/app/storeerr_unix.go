//go:build unix

package app

import "golang.org/x/sys/unix"

// freeBytes is the space an unprivileged user may still use on the file
// system holding dir, -1 when it cannot be read.
func freeBytes(dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(uint64(st.Bavail) * uint64(st.Bsize)) //nolint:gosec // sizes fit
}

// writable reports whether this process may create files in dir (false on
// a read-only file system, even for root).
func writable(dir string) bool {
	return unix.Access(dir, unix.W_OK) == nil
}
