package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/deepgraph/deepgraph/internal/procgroup"
)

// stopGrace is how long a stdio server has to exit after its stdin is
// closed, and then after SIGTERM, before its process group is killed.
const stopGrace = 2 * time.Second

// inheritedEnv are the variables a stdio server inherits from this
// process: what programs need to run, find files and reach the network —
// not the API keys this process was given.
var inheritedEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "TZ", "TMPDIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
	// Windows
	"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "TEMP", "TMP", "USERPROFILE",
	"APPDATA", "LOCALAPPDATA", "PROGRAMFILES", "PROGRAMDATA", "HOMEDRIVE", "HOMEPATH", "USERNAME",
}

// inheritedPrefixes are the prefixes of inherited variables: locale,
// XDG directories, npm's and nvm's settings (npx needs them).
var inheritedPrefixes = []string{"LC_", "XDG_", "npm_config_", "NPM_CONFIG_", "NVM_"}

// serverEnv is the environment of a stdio server: the inherited variables
// of environ, then extra (which wins).
func serverEnv(environ []string, extra map[string]string) []string {
	var env []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, override := extra[k]; override {
			continue
		}
		if inherited(k) {
			env = append(env, kv)
		}
	}
	for _, k := range sortedKeys(extra) {
		env = append(env, k+"="+extra[k])
	}
	return env
}

func inherited(k string) bool {
	for _, name := range inheritedEnv {
		if k == name || (runtime.GOOS == "windows" && strings.EqualFold(k, name)) {
			return true
		}
	}
	for _, p := range inheritedPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// process is a running stdio server. It leads a process group of its own
// (on Unix), so that stopping it stops what it started (npx starts node).
type process struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// exited is closed when the server has exited and been reaped; err is
	// then what Wait returned.
	exited chan struct{}
	err    error
	stderr *stderrLog

	mu     sync.Mutex
	reaped bool
}

// startProcess starts the server s. Its stdout is returned for reading
// MCP messages; its stderr goes to the logger (debug level), and its last
// lines are kept for the report of a crash.
func startProcess(s Server, logger *slog.Logger) (*process, io.ReadCloser, error) {
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = serverEnv(os.Environ(), s.Env)
	procgroup.Configure(cmd)
	// A grandchild that escaped the group could hold stderr open: Wait
	// gives up on it after this long.
	cmd.WaitDelay = stopGrace
	p := &process{cmd: cmd, exited: make(chan struct{}), stderr: &stderrLog{server: s.Name, logger: logger}}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, nil, err
	}
	// Started through procgroup, so that the exec tools' sweep of adopted
	// orphans (where PID namespaces are refused) knows it is no orphan.
	if err := procgroup.Start(cmd); err != nil {
		return nil, nil, err
	}
	go p.wait()
	return p, stdout, nil
}

// wait reaps the server. Where the system lets it wait for the exit
// without reaping (Linux), it kills the rest of the group first, while
// the group's id is still reserved.
func (p *process) wait() {
	pid := p.cmd.Process.Pid
	if procgroup.WaitExited(pid) {
		p.mu.Lock()
		_ = procgroup.SignalGroup(pid, procgroup.Kill) // what it started dies with it
		p.reaped = true                                // nothing is left to signal
		p.mu.Unlock()
	}
	err := p.cmd.Wait()
	procgroup.Release(pid)
	p.mu.Lock()
	if !p.reaped {
		_ = procgroup.SignalGroup(pid, procgroup.Kill) // best effort where the exit could not be awaited first
		p.reaped = true
	}
	p.err = err
	p.mu.Unlock()
	p.stderr.flush()
	close(p.exited)
}

// signal sends sig to the server's group unless it has been reaped (its
// pid may then belong to another process).
func (p *process) signal(sig procgroup.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		_ = procgroup.SignalGroup(p.cmd.Process.Pid, sig)
	}
}

// stop ends the server as the MCP specification asks: close its stdin, wait,
// SIGTERM, wait, SIGKILL — to the whole group. It returns when the server
// has been reaped.
func (p *process) stop() {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
		return
	case <-time.After(stopGrace):
	}
	p.signal(procgroup.Term)
	select {
	case <-p.exited:
		return
	case <-time.After(stopGrace):
	}
	p.signal(procgroup.Kill)
	<-p.exited
}

// exitText describes how the server ended: "exit status 3", "signal: killed".
func (p *process) exitText() string {
	select {
	case <-p.exited:
	default:
		return "still running"
	}
	if p.err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ProcessState.String()
	}
	return p.err.Error()
}

// stdinCloser is the writing half of a stdio server's connection: closing
// it stops the server.
type stdinCloser struct {
	p    *process
	once sync.Once
}

func (w *stdinCloser) Write(b []byte) (int, error) { return w.p.stdin.Write(b) }

func (w *stdinCloser) Close() error {
	w.once.Do(w.p.stop)
	return nil
}

// stdoutReader is the reading half: Wait closes the pipe when the server has
// exited, so closing it here is left to Wait.
type stdoutReader struct{ io.Reader }

func (stdoutReader) Close() error { return nil }

// stderrLog logs a server's stderr line by line and keeps the last lines.
type stderrLog struct {
	server string
	logger *slog.Logger

	mu      sync.Mutex
	partial []byte
	tail    []string
}

const (
	maxStderrLine  = 1000
	stderrTailSize = 5
)

func (l *stderrLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.line(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	if len(l.partial) > maxStderrLine {
		l.line(string(l.partial))
		l.partial = l.partial[:0]
	}
	return len(b), nil
}

func (l *stderrLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.line(string(l.partial))
		l.partial = nil
	}
}

func (l *stderrLog) line(s string) {
	s = strings.TrimRight(strings.ToValidUTF8(s, "\uFFFD"), "\r ")
	if s == "" {
		return
	}
	if len(s) > maxStderrLine {
		s = s[:maxStderrLine] + "…"
	}
	l.logger.Debug("mcp: server stderr", "server", l.server, "line", s)
	l.tail = append(l.tail, s)
	if len(l.tail) > stderrTailSize {
		l.tail = l.tail[1:]
	}
}

// lastLines returns the server's last stderr lines.
func (l *stderrLog) lastLines() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.tail, "\n")
}

// describeStart explains why a stdio server did not start.
func describeStart(s Server, err error) error {
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Errorf("command %q not found in PATH: install it or give its full path", s.Command)
	}
	return fmt.Errorf("starting %s: %w", s.Command, err)
}
