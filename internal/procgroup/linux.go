//go:build linux

package procgroup

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// WaitExited blocks until process pid has exited, without reaping it
// (waitid with WNOWAIT), so that its process group id stays reserved while
// the rest of the group is killed. It reports false if that was not
// possible.
func WaitExited(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil
	}
}

// Probe reports the strongest containment this process may use, by
// starting /bin/sh -c "exit 0" in each namespace setup, strongest first:
// PIDNamespace, then UserPIDNamespace, else Group.
func Probe() Containment {
	for _, c := range []Containment{PIDNamespace, UserPIDNamespace} {
		cmd := exec.Command("/bin/sh", "-c", "exit 0")
		Configure(cmd)
		Contain(cmd, c)
		if Start(cmd) != nil {
			continue
		}
		err := cmd.Wait()
		Release(cmd.Process.Pid)
		if err == nil {
			return c
		}
	}
	return Group
}

// Contain sets cmd up for containment c (after Configure): the namespaces
// to create, if any, and SIGKILL when the thread that starts it ends —
// with this program, however it ends.
func Contain(cmd *exec.Cmd, c Containment) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	a.Pdeathsig = syscall.SIGKILL
	switch c {
	case PIDNamespace:
		a.Cloneflags |= syscall.CLONE_NEWPID
	case UserPIDNamespace:
		a.Cloneflags |= syscall.CLONE_NEWPID | syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
}

// Adopt makes this process a child subreaper: the orphans of the
// processes it started become its children, for Sweep to find. It is a
// property of the whole process and stays on.
func Adopt() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return errors.New("cannot adopt orphaned processes (PR_SET_CHILD_SUBREAPER): " + err.Error())
	}
	return nil
}

// Sweep kills the children of this process that Start did not start and
// that SpareTagged does not spare — the orphans it adopted (see Adopt) —
// with all their descendants, and reaps them. Each round stops (SIGSTOP) the processes found, so that none forks
// while the rest are looked for, then kills them; the descendants of a
// killed process become children of this one and are reaped in the next
// round. It returns how many processes it killed.
func Sweep() int {
	registry.gate.Lock()
	defer registry.gate.Unlock()
	self := os.Getpid()
	marks := spareMarks()
	killed := map[int]bool{}
	for round := 0; round < 32; round++ {
		targets := map[int]bool{}
		for look := 0; look < 32; look++ {
			procs := scanProcs()
			found := false
			var add func(pid int)
			add = func(pid int) {
				if targets[pid] {
					return
				}
				targets[pid], found = true, true
				if procs.state(pid) != 'Z' {
					_ = syscall.Kill(pid, syscall.SIGSTOP)
				}
				for _, child := range procs.children(pid) {
					add(child)
				}
			}
			for _, child := range procs.children(self) {
				if !registered(child) && !tagged(child, marks) {
					add(child)
				}
			}
			for pid := range targets {
				for _, child := range procs.children(pid) {
					add(child)
				}
			}
			if !found {
				break
			}
		}
		if len(targets) == 0 {
			break
		}
		for pid := range targets {
			if syscall.Kill(pid, syscall.SIGKILL) == nil && !killed[pid] {
				killed[pid] = true
			}
		}
		for pid := range targets {
			reap(pid)
		}
	}
	return len(killed)
}

// tagged reports whether pid's environment holds one of marks.
func tagged(pid int, marks []string) bool {
	if len(marks) == 0 {
		return false
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	env = append([]byte{0}, env...)
	for _, m := range marks {
		if bytes.Contains(env, []byte("\x00"+m+"\x00")) {
			return true
		}
	}
	return false
}

// reap waits for pid if it is a child of this process (ECHILD otherwise),
// so that the killed orphan leaves no zombie.
func reap(pid int) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

// proc is what Sweep needs of a process.
type proc struct {
	state    byte
	children []int
}

// procTable is the processes by pid.
type procTable map[int]*proc

func (t procTable) state(pid int) byte {
	if p := t[pid]; p != nil {
		return p.state
	}
	return 0
}

func (t procTable) children(pid int) []int {
	if p := t[pid]; p != nil {
		return p.children
	}
	return nil
}

// scanProcs reads every process's state and parent from /proc.
func scanProcs() procTable {
	procs := procTable{}
	get := func(pid int) *proc {
		p := procs[pid]
		if p == nil {
			p = &proc{}
			procs[pid] = p
		}
		return p
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return procs
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 2 || len(f[0]) != 1 {
			continue
		}
		ppid, err := strconv.Atoi(string(f[1]))
		if err != nil {
			continue
		}
		get(pid).state = f[0][0]
		parent := get(ppid)
		parent.children = append(parent.children, pid)
	}
	return procs
}
