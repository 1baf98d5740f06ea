//go:build !unix

package runstore

import "os"

// processExists reports whether os.FindProcess finds pid. On Windows that
// opens the process, which fails when there is none; where it always
// succeeds the answer is true, and the stored status is trusted.
func processExists(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
