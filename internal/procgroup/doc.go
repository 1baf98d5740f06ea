// Package procgroup runs a command so that it and everything it starts stop
// together. It is shared by the exec tools (package tools) and the stdio MCP
// client (tools/mcp).
//
// # Process groups
//
// On Unix, Configure makes the command the leader of its own process group
// and SignalGroup signals the group. On Linux, WaitExited waits for the
// leader's exit without reaping it, so the group id cannot be reused while
// the rest of the group is killed; elsewhere it reports false and callers
// kill the group after Wait, best effort. Without process groups
// (Windows), SignalGroup kills the one process.
//
// # Containment (Linux)
//
// A process group does not hold a process that calls setsid or setpgid,
// and nothing kills a group when the program that started it is killed.
// Contain therefore ties a command's processes to it by one of these
// mechanisms, the strongest that Probe finds permitted:
//
//   - PIDNamespace: the command is PID 1 of a PID namespace of its own
//     (CLONE_NEWPID; needs CAP_SYS_ADMIN, as root has). When PID 1 exits
//     the kernel kills every process of the namespace — setsid, a cleared
//     environment or a double fork change nothing — and PID 1 gets SIGKILL
//     when the thread that started it ends (Pdeathsig), so the namespace
//     dies with this program, SIGKILL included. Inside, PID 1 ignores
//     signals it has no handler for, except SIGKILL from outside: a
//     SIGTERM to the group reaches the other processes, and the SIGKILL
//     that follows the grace period ends the command.
//   - UserPIDNamespace: the same in a new user namespace (CLONE_NEWUSER,
//     this user's uid and gid mapped to themselves), for unprivileged
//     users where the system permits user namespaces. The command keeps
//     this user's access to files; set-user-ID programs (sudo) do not gain
//     privileges inside.
//   - Group: where neither is permitted (user namespaces switched off,
//     a container's seccomp profile), the process group, the leader's
//     Pdeathsig, and a sweep: Adopt makes this process a child subreaper
//     (PR_SET_CHILD_SUBREAPER), so the orphans of a command's processes
//     become its children instead of init's, and Sweep kills them, with
//     their descendants, when a command ends. What a command started and
//     orphaned survives a SIGKILL of this program in this mode: nothing is
//     left to kill it.
//
// A cgroup was considered instead of namespaces: it catches every process
// of a call too (cgroup.kill), but nothing kills it when the program that
// made it is killed, and it needs a delegated cgroup tree, which
// unprivileged programs seldom have.
//
// # Adopted orphans and Start
//
// The subreaper attribute is one per process, so the bookkeeping that goes
// with it is too: Sweep kills every child of this process that Start did
// not start (or that was Released), as such a child can only be an
// adopted orphan — provided the program starts its own children through
// Start, as the exec tools and the MCP client do, or tags those that other
// code starts and spares them with SpareTagged, as the browser tool does
// for Chromium. A child started otherwise while sweeping is on would be
// taken for an orphan; programs that embed the exec tools where namespaces
// are refused must start their children one of these ways.
package procgroup
