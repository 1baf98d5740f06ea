//go:build unix && !linux

package tools

import "syscall"

// dieWithParent does nothing: only Linux can tie a process's life to its
// parent's.
func dieWithParent(*syscall.SysProcAttr) {}

// killTagged does nothing: without /proc, processes that left the
// command's process group are not looked for.
func killTagged(string) {}
