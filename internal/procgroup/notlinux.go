//go:build !linux

package procgroup

// WaitExited reports false: outside Linux the process cannot be awaited
// without reaping it, so callers kill the group after Wait, best effort.
func WaitExited(int) bool { return false }
