//go:build unix

package tools

import (
	"io/fs"
	"os"
	"syscall"
)

// openNonblock opens a file without waiting: a named pipe put in place of a
// file does not block the open (it is refused once opened).
const openNonblock = syscall.O_NONBLOCK

// linkCount is the number of hard links of the file info describes.
func linkCount(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// keepOwner gives the file that replaced old at name old's owner and
// group, where this process may (as root), so that an edit does not take
// a file from its owner. A file that did not exist (old nil) keeps the
// owner it was made with.
func keepOwner(root *os.Root, name string, old fs.FileInfo) {
	if old == nil {
		return
	}
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok || (int(st.Uid) == os.Getuid() && int(st.Gid) == os.Getgid()) {
		return
	}
	_ = root.Lchown(name, int(st.Uid), int(st.Gid)) // refused unless privileged: the editing user keeps it
}
