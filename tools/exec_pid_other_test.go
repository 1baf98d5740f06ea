//go:build unix && !linux

package tools

// hostPID returns nspid: outside Linux a command has no PID namespace, so
// the pids it prints are this process's view.
func hostPID(_ string, nspid int) (int, bool) { return nspid, true }
