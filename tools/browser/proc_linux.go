//go:build linux

package browser

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// dieWithParent makes the kernel kill the browser when this program dies,
// even by SIGKILL (chromedp starts it from a goroutine locked to its
// thread, so the thread's end is the program's). Its children go with it:
// they watch their parent.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// killTagged kills the processes that carry the session's tag in their
// environment — those of its browser that left the process group — until
// a few looks in a row find none (a child can fork as its parent dies).
func killTagged(tag string) {
	want := []byte(tagVar + "=" + tag)
	deadline := time.Now().Add(2 * time.Second)
	for quiet := 0; quiet < 3 && time.Now().Before(deadline); {
		if scanWith(want, true) == 0 {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// scanWith counts the processes whose environment holds the entry want,
// killing them when kill is set.
func scanWith(want []byte, kill bool) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for entry := range bytes.SplitSeq(env, []byte{0}) {
			if bytes.Equal(entry, want) {
				if kill {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				n++
				break
			}
		}
	}
	return n
}

// alive reports whether process pid exists (one of another user counts).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
