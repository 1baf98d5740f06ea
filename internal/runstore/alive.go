package runstore

import (
	"math"
	"os"
)

// CurrentProcess returns the host and pid to record in Run.Host and Run.PID
// for a run of this process: the host name as Alive compares it, and the
// process id.
func CurrentProcess() (host string, pid int) {
	return hostname(), os.Getpid()
}

// Alive reports whether the process pid on host may still be running: true
// when host is another machine or unknown (it cannot be told from here, so
// the stored status is trusted), and otherwise whether a process with that
// id exists on this machine. A pid reused by another process since — after
// a reboot, say — is taken for the run's.
func Alive(host string, pid int) bool {
	if !isLocal(host) {
		return true
	}
	if pid <= 0 || pid > math.MaxInt32 { // no such process; 0 and -1 would address groups
		return false
	}
	return processExists(pid)
}

// isLocal reports whether host is this machine.
func isLocal(host string) bool {
	return host != "" && host == hostname()
}

// hostname is this machine's host name, "" when it cannot be read.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}
