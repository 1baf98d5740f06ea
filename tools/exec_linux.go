//go:build linux

package tools

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// killTagged kills every process of this user whose environment holds
// mark (one entry, KEY=VALUE): the processes a command started that left
// its process group (setsid, a daemon's double fork) but kept the
// environment it was given. It is used where a command has no PID
// namespace of its own (procgroup.Group), as a net under the sweep of
// adopted orphans, in case this process could not become their subreaper.
// Each round stops (SIGSTOP) the tagged processes not yet stopped, so that
// none forks while it is looked for; when a round finds no new one, all
// are killed. Processes that cleared or replaced their environment (env
// -i) are not found by it.
func killTagged(mark string) {
	if mark == "" {
		return
	}
	needle := []byte("\x00" + mark + "\x00")
	self := os.Getpid()
	uid := uint32(os.Getuid())
	stopped := map[int]bool{}
	for round := 0; round < 100; round++ {
		found := false
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self || stopped[pid] {
				continue
			}
			if info, err := e.Info(); err != nil {
				continue
			} else if st, ok := info.Sys().(*syscall.Stat_t); !ok || st.Uid != uid {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || !bytes.Contains(append([]byte{0}, env...), needle) {
				continue
			}
			_ = syscall.Kill(pid, syscall.SIGSTOP)
			stopped[pid], found = true, true
		}
		if !found {
			break
		}
	}
	for pid := range stopped {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
