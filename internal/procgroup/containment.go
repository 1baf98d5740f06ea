package procgroup

import (
	"os/exec"
	"sync"
)

// Containment is how the processes a command starts are tied to it: see
// the package documentation.
type Containment int

// The containments, weakest first.
const (
	// Group is the process group, with (on Linux) the leader's parent-death
	// signal and the sweep of adopted orphans.
	Group Containment = iota
	// PIDNamespace is a PID namespace of the command's own.
	PIDNamespace
	// UserPIDNamespace is a PID namespace in a user namespace of the
	// command's own.
	UserPIDNamespace
)

// String names the containment: "process group", "PID namespace", "user
// and PID namespace".
func (c Containment) String() string {
	switch c {
	case PIDNamespace:
		return "PID namespace"
	case UserPIDNamespace:
		return "user and PID namespace"
	default:
		return "process group"
	}
}

// Namespaced reports whether the containment is a PID namespace, which
// kills everything the command started when it ends.
func (c Containment) Namespaced() bool { return c == PIDNamespace || c == UserPIDNamespace }

// registry holds the processes Start started and Release has not released,
// and the environment entries of SpareTagged, which Sweep spares. gate lets
// Starts run together and a Sweep alone, so that a process is never seen
// started but not yet registered.
var registry = struct {
	gate  sync.RWMutex
	mu    sync.Mutex
	pids  map[int]struct{}
	marks map[string]int
}{pids: map[int]struct{}{}, marks: map[string]int{}}

// SpareTagged makes Sweep spare the processes whose environment holds
// mark (one KEY=VALUE entry), with their descendants, until release is
// called: for children that other code starts — a browser that a library
// launches — tagged before they start, so that no Sweep can catch them
// between their start and a Register.
func SpareTagged(mark string) (release func()) {
	registry.mu.Lock()
	registry.marks[mark]++
	registry.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			registry.mu.Lock()
			if registry.marks[mark]--; registry.marks[mark] <= 0 {
				delete(registry.marks, mark)
			}
			registry.mu.Unlock()
		})
	}
}

// spareMarks are SpareTagged's marks now.
func spareMarks() []string {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	marks := make([]string, 0, len(registry.marks))
	for m := range registry.marks {
		marks = append(marks, m)
	}
	return marks
}

// Start starts cmd and registers its process, so that Sweep does not take
// it for an adopted orphan. Call Release once it has been reaped (after
// cmd.Wait).
func Start(cmd *exec.Cmd) error {
	registry.gate.RLock()
	defer registry.gate.RUnlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	registry.mu.Lock()
	registry.pids[cmd.Process.Pid] = struct{}{}
	registry.mu.Unlock()
	return nil
}

// Release forgets a process Start started, once it has been reaped.
func Release(pid int) {
	registry.mu.Lock()
	delete(registry.pids, pid)
	registry.mu.Unlock()
}

// registered reports whether Start started pid and it was not released.
func registered(pid int) bool {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	_, ok := registry.pids[pid]
	return ok
}
