//go:build unix && !linux

package mcp

// waitExited cannot wait without reaping here: the group is killed after
// Wait, best effort.
func waitExited(int) bool { return false }
