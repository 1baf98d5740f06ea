// Package procgroup runs a command as the leader of its own process group
// and signals the whole group, so that a command and everything it started
// stop together. It is shared by the exec tools (package tools) and the
// stdio MCP client (tools/mcp).
//
// On Unix, Configure makes the command a group leader and SignalGroup
// signals the group. On Linux, WaitExited waits for the leader's exit
// without reaping it, so the group id cannot be reused while the rest of
// the group is killed; elsewhere it reports false and callers kill the
// group after Wait, best effort. Without process groups (Windows),
// SignalGroup kills the one process.
package procgroup
