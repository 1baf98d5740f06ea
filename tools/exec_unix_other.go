//go:build unix && !linux

package tools

import "syscall"

// waitExited reports false: outside Linux the process is reaped by Wait
// before its group is killed, which leaves a tiny window in which the group
// id could be reused.
func waitExited(int) bool { return false }

// dieWithParent does nothing: only Linux can tie a process's life to its
// parent's.
func dieWithParent(*syscall.SysProcAttr) {}

// killTagged does nothing: without /proc, processes that left the
// command's process group are not looked for.
func killTagged(string) {}
