//go:build !unix

package tools

// openNonblock is 0 where named pipes cannot appear in the file system
// (Windows, Plan 9): files are opened as usual.
const openNonblock = 0
