//go:build linux

package tools

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// hostPID turns a pid a command printed ($$, $!) — its number in the
// command's PID namespace, if it has one — into this process's view: the
// running process of that innermost pid whose working directory is ws (a
// command's processes run in the workspace). ok is false when there is
// none: the process is gone.
func hostPID(ws string, nspid int) (int, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	want := strconv.Itoa(nspid)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(status))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 2 || f[0] != "NSpid:" || f[len(f)-1] != want {
				continue
			}
			if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && cwd == ws && !gone(pid) {
				return pid, true
			}
		}
	}
	return 0, false
}
