//go:build unix

package tools

import "syscall"

// openNonblock opens a file without waiting: a named pipe put in place of a
// file does not block the open (it is refused once opened).
const openNonblock = syscall.O_NONBLOCK
