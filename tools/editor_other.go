//go:build !unix

package tools

import (
	"io/fs"
	"os"
)

// openNonblock is 0 where named pipes cannot appear in the file system
// (Windows, Plan 9): files are opened as usual.
const openNonblock = 0

// linkCount is 1: hard links are not looked for here.
func linkCount(fs.FileInfo) uint64 { return 1 }

// keepOwner does nothing: files have no Unix owner here.
func keepOwner(*os.Root, string, fs.FileInfo) {}
