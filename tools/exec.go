package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepgraph/deepgraph/internal/procgroup"
)

// ErrExecDisabled is returned by NewPythonExecute and NewBash when
// ExecOptions.AllowExec is false.
var ErrExecDisabled = errors.New("tools: code execution is disabled; set AllowExec to enable python_execute and bash (they run code as this user: see the package documentation)")

// ExecOptions configure python_execute and bash. Zero values take the
// defaults named on each field.
type ExecOptions struct {
	// AllowExec must be true: the tools run arbitrary code the model writes,
	// as the user running this program. Leaving it false makes the
	// constructors fail with ErrExecDisabled, so a configuration that never
	// asked for code execution cannot get it by accident.
	AllowExec bool
	// Workspace is the working directory of every command, and its HOME.
	// Required; it must exist.
	Workspace string
	// Timeout bounds one call (default 2 minutes). When it passes, the whole
	// process group gets SIGTERM, then SIGKILL after KillGrace.
	Timeout time.Duration
	// KillGrace is how long a cancelled or timed-out command has between
	// SIGTERM and SIGKILL (default 2 s). It also bounds the wait for output
	// held open by a process that left the process group.
	KillGrace time.Duration
	// MaxOutputBytes caps the combined stdout and stderr returned (default
	// 16000). Longer output keeps its first and last halves, with a note
	// saying how much was cut.
	MaxOutputBytes int
	// CommandPrefix is prepended to every command line, to run it inside a
	// container or another runtime. "{workspace}" in an element is replaced
	// by the absolute workspace path. Example:
	//
	//	[]string{"docker", "run", "--rm", "--network=none", "-v", "{workspace}:/w", "-w", "/w",
	//		"python:3.12", "timeout", "120"}
	//
	// (A container keeps running if only its client is killed; putting
	// timeout(1) inside the container bounds it too.)
	CommandPrefix []string
	// Env adds KEY=VALUE entries to the scrubbed environment (see the package
	// documentation); they override the defaults. The parent's environment
	// is never passed on as a whole, so API keys stay out of reach unless
	// listed here.
	Env []string
	// Python is the interpreter python_execute runs (default "python3").
	Python string
	// Shell is the shell bash runs (default "bash").
	Shell string
	// Logger receives a debug record per call (tool, duration, outcome; not
	// the code). Nil disables logging.
	Logger *slog.Logger
}

// Exec defaults.
const (
	DefaultExecTimeout    = 2 * time.Minute
	DefaultKillGrace      = 2 * time.Second
	DefaultMaxOutputBytes = 16000
	// MaxCodeBytes is the largest code or command accepted: it is passed as
	// one argument, and Linux limits one argument to 128 KiB.
	MaxCodeBytes = 100 << 10
)

type execArgs struct {
	Code string `json:"code" jsonschema:"The Python code to run. Use print() to show results."`
}

type bashArgs struct {
	Command string `json:"command" jsonschema:"The bash command(s) to run."`
}

// execTool runs one interpreter invocation per call.
type execTool struct {
	name string
	tool Tool
	ws   *workspace
	opts ExecOptions
	argv func(code string) []string
	// withTimeout bounds one call; tests replace it to fire the timeout
	// exactly when they choose.
	withTimeout func(context.Context, time.Duration) (context.Context, context.CancelFunc)
	// contain is how a call's processes are tied to it (procgroup.Probe's
	// answer; tests force the fallback).
	contain procgroup.Containment
}

func newExecTool(name string, opts ExecOptions) (*execTool, error) {
	if !opts.AllowExec {
		return nil, ErrExecDisabled
	}
	if err := execSupported(); err != nil {
		return nil, err
	}
	ws, err := newWorkspace(opts.Workspace)
	if err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultExecTimeout
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = DefaultKillGrace
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.Python == "" {
		opts.Python = "python3"
	}
	if opts.Shell == "" {
		opts.Shell = "bash"
	}
	for _, kv := range opts.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("tools: ExecOptions.Env entry %q is not KEY=VALUE", kv)
		}
	}
	opts.CommandPrefix = append([]string(nil), opts.CommandPrefix...)
	for i, p := range opts.CommandPrefix {
		opts.CommandPrefix[i] = strings.ReplaceAll(p, "{workspace}", ws.dir)
	}
	return &execTool{name: name, ws: ws, opts: opts, withTimeout: context.WithTimeout, contain: probeContainment()}, nil
}

// probeContainment is the containment exec calls get here; with the
// fallback, this process adopts the orphans of their processes for the
// sweep after each call.
func probeContainment() procgroup.Containment {
	c := procgroup.Probe()
	if c == procgroup.Group {
		_ = procgroup.Adopt() // where it fails (not Linux), the sweep finds nothing and killTagged remains
	}
	return c
}

// ExecContainment says how python_execute and bash tie the processes a
// call starts to the call on this system, for diagnostics: on Linux each
// call in its own PID namespace (with a user namespace when this user is
// unprivileged) where the system permits it, else its process group and a
// sweep of the orphans this process adopts. See the package documentation.
func ExecContainment() string {
	return describeContainment(procgroup.Probe())
}

// describeContainment is ExecContainment's sentence for c.
func describeContainment(c procgroup.Containment) string {
	switch {
	case c.Namespaced():
		return "each call runs in its own " + c.String() + ": everything it starts is killed when it ends, and with this program, even by SIGKILL"
	case runtime.GOOS == "linux":
		return "PID namespaces are not permitted here, so each call runs in its own process group: what it starts is killed when it ends " +
			"(also what left the group: this program adopts and sweeps orphans), but what it left behind may outlive this program if it is killed with SIGKILL"
	default:
		return "each call runs in its own process group, killed when the call ends; what leaves the group (setsid) may survive"
	}
}

// NewPythonExecute returns the python_execute tool: each call runs
// `python3 -c <code>` in the workspace, in its own process group, with a
// timeout, an output cap and a scrubbed environment. It fails with
// ErrExecDisabled unless opts.AllowExec is true. It is not a sandbox: see
// the package documentation.
func NewPythonExecute(opts ExecOptions) (Tool, error) {
	t, err := newExecTool(PythonExecuteName, opts)
	if err != nil {
		return nil, err
	}
	t.argv = func(code string) []string { return []string{t.opts.Python, "-c", code} }
	desc := fmt.Sprintf(`Run Python 3 code in the workspace directory and return what it prints (stdout and stderr combined). Each call starts a fresh interpreter: variables and imports do not persist between calls, so use print() for every value you need and write files to keep data. Standard input is empty. A call is stopped after %s; output beyond %d bytes is cut.`,
		t.opts.Timeout, t.opts.MaxOutputBytes)
	t.tool, err = Func(PythonExecuteName, desc, func(ctx context.Context, a execArgs) (Result, error) {
		return t.run(ctx, a.Code)
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// NewBash returns the bash tool: each call runs `bash -c <command>` in the
// workspace, in its own process group, with a timeout, an output cap and a
// scrubbed environment. Every call is a fresh shell (no persistent session):
// cd, variables and background jobs do not carry over, and background
// processes are killed when the command returns. It fails with
// ErrExecDisabled unless opts.AllowExec is true. It is not a sandbox: see
// the package documentation.
func NewBash(opts ExecOptions) (Tool, error) {
	t, err := newExecTool(BashName, opts)
	if err != nil {
		return nil, err
	}
	t.argv = func(cmd string) []string { return []string{t.opts.Shell, "-c", cmd} }
	desc := fmt.Sprintf(`Run a bash command in the workspace directory and return its combined stdout and stderr. Each call starts a fresh shell: cd, variables and background jobs do not carry over (chain steps with && in one call), and background processes are killed when the command returns. Standard input is empty, so interactive programs get EOF. A call is stopped after %s; output beyond %d bytes is cut (keeping the start and the end).`,
		t.opts.Timeout, t.opts.MaxOutputBytes)
	t.tool, err = Func(BashName, desc, func(ctx context.Context, a bashArgs) (Result, error) {
		return t.run(ctx, a.Command)
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (t *execTool) Name() string                   { return t.tool.Name() }
func (t *execTool) Description() string            { return t.tool.Description() }
func (t *execTool) Parameters() *jsonschema.Schema { return t.tool.Parameters() }
func (t *execTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	return t.tool.Run(ctx, args)
}

// CallTimeout implements Bounded: a call bounds itself (Timeout, then the
// kill grace for the command and for its output).
func (t *execTool) CallTimeout() time.Duration {
	return t.opts.Timeout + 2*t.opts.KillGrace + time.Second
}

// env is the scrubbed environment of a command.
func (t *execTool) env() []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	lang := os.Getenv("LANG")
	if lang == "" {
		lang = "C.UTF-8"
	}
	env := []string{
		"PATH=" + path,
		"HOME=" + t.ws.dir,
		"PWD=" + t.ws.dir,
		"LANG=" + lang,
		"TMPDIR=" + os.TempDir(),
		"TERM=dumb",
		"NO_COLOR=1",
		"PYTHONUNBUFFERED=1",
	}
	for _, kv := range t.opts.Env {
		k, _, _ := strings.Cut(kv, "=")
		env = slicesDeleteKey(env, k)
		env = append(env, kv)
	}
	return env
}

func slicesDeleteKey(env []string, key string) []string {
	out := env[:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return out
}

func (t *execTool) run(ctx context.Context, code string) (Result, error) {
	if strings.TrimSpace(code) == "" {
		return Failf("nothing to run: the %s is empty", t.inputWord()), nil
	}
	if len(code) > MaxCodeBytes {
		return Failf("the %s is %d bytes, more than the %d accepted; write it to a file (str_replace_editor create) and run the file", t.inputWord(), len(code), MaxCodeBytes), nil
	}
	if strings.ContainsRune(code, 0) {
		return Failf("the %s contains a NUL byte", t.inputWord()), nil
	}
	argv := append(append([]string(nil), t.opts.CommandPrefix...), t.argv(code)...)
	mark, err := execMark()
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	out, err := runGroup(ctx, runSpec{
		argv: argv, dir: t.ws.dir, env: append(t.env(), mark), mark: mark,
		timeout: t.opts.Timeout, grace: t.opts.KillGrace, maxOutput: t.opts.MaxOutputBytes,
		withTimeout: t.withTimeout, contain: t.contain,
	})
	if t.opts.Logger != nil {
		t.opts.Logger.LogAttrs(ctx, slog.LevelDebug, "tool exec",
			slog.String("tool", t.name), slog.Duration("duration", time.Since(start)),
			slog.Int("exit_code", out.exitCode), slog.Bool("timed_out", out.timedOut),
			slog.String("containment", out.contain.String()), slog.Int("orphans_killed", out.swept), slog.Any("error", err))
	}
	if err != nil {
		return Result{Output: out.text}, err
	}
	res := Result{Output: out.text}
	switch {
	case out.timedOut:
		res.Error = fmt.Sprintf("timed out after %s; the command and its child processes were killed", t.opts.Timeout)
	case out.exitCode != 0:
		res.Error = out.status
	}
	return res, nil
}

func (t *execTool) inputWord() string {
	if t.name == BashName {
		return "command"
	}
	return "code"
}

// ExecIDVar is the environment variable that tags the processes of one
// python_execute or bash call with a value of its own, so that those that
// left the call's process group are found and killed with it (on Linux,
// where the call has no PID namespace of its own).
const ExecIDVar = "DEEPGRAPH_EXEC_ID"

// execMark is a new ExecIDVar entry.
func execMark() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("tagging the command: %w", err)
	}
	return ExecIDVar + "=" + hex.EncodeToString(b), nil
}

// runSpec is one command to run in its own process group.
type runSpec struct {
	argv      []string
	dir       string
	env       []string
	mark      string // an entry of env that tags the command's processes; "" for none
	timeout   time.Duration
	grace     time.Duration
	maxOutput int
	// withTimeout derives the call's context; nil means context.WithTimeout.
	withTimeout func(context.Context, time.Duration) (context.Context, context.CancelFunc)
	// contain is how the command's processes are tied to it.
	contain procgroup.Containment
}

// runOutput is what a command did.
type runOutput struct {
	text     string // combined output, cleaned and capped, with notes
	exitCode int    // 0 on success, -1 when killed by a signal
	status   string // "exit status 2", "killed by signal: terminated"
	timedOut bool
	contain  procgroup.Containment // the containment the command ran with
	swept    int                   // orphans killed after it (procgroup.Group)
}

// runGroup starts spec in a new process group, contained as spec.contain
// says, and waits for it. The whole group is killed when the leader exits
// (so background children do not outlive the call), when spec.timeout
// passes, and when ctx is done. In a PID namespace (Linux), the kernel then
// kills every other process of the namespace, whatever it did to leave the
// group, and the namespace dies with this process, even by SIGKILL.
// Without one (procgroup.Group), the orphans this process adopted are
// swept, and so are the processes that carry spec.mark in their
// environment (Linux; see killTagged); the leader dies with this process
// (Linux), what it started may not. The error is non-nil only if the
// command could not start or ctx was done.
func runGroup(ctx context.Context, spec runSpec) (runOutput, error) {
	out := runOutput{contain: spec.contain}
	pr, pw, err := os.Pipe()
	if err != nil {
		return out, fmt.Errorf("creating an output pipe: %w", err)
	}
	command := func(c procgroup.Containment) *exec.Cmd {
		cmd := exec.Command(spec.argv[0], spec.argv[1:]...)
		cmd.Dir = spec.dir
		cmd.Env = spec.env
		cmd.Stdin = nil // /dev/null
		cmd.Stdout, cmd.Stderr = pw, pw
		configureGroup(cmd, c)
		return cmd
	}
	cmd := command(spec.contain)
	err = procgroup.Start(cmd)
	if err != nil && spec.contain.Namespaced() {
		// The namespace was permitted when the tool was made but not now
		// (a limit on namespaces reached, say): run in the fallback.
		out.contain = procgroup.Group
		_ = procgroup.Adopt()
		cmd = command(procgroup.Group)
		err = procgroup.Start(cmd)
	}
	if err != nil {
		pw.Close()
		pr.Close()
		return out, fmt.Errorf("starting %s: %w", spec.argv[0], err)
	}
	pw.Close()
	pid := cmd.Process.Pid

	buf := &headTail{max: spec.maxOutput}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		_, _ = io.Copy(buf, pr)
	}()

	// Signals go to the group only while the leader is not reaped, so its
	// id cannot have been reused.
	var mu sync.Mutex
	reaped := false
	signal := func(sig procgroup.Signal) {
		mu.Lock()
		defer mu.Unlock()
		if !reaped {
			_ = procgroup.SignalGroup(pid, sig)
		}
	}
	done := make(chan error, 1)
	go func() {
		if procgroup.WaitExited(pid) {
			mu.Lock()
			_ = procgroup.SignalGroup(pid, procgroup.Kill) // background children die with the command
			reaped = true
			mu.Unlock()
			err := cmd.Wait()
			procgroup.Release(pid)
			done <- err
			return
		}
		err := cmd.Wait()
		procgroup.Release(pid)
		mu.Lock()
		_ = procgroup.SignalGroup(pid, procgroup.Kill) // best effort where exit cannot be awaited without reaping
		reaped = true
		mu.Unlock()
		done <- err
	}()

	withTimeout := spec.withTimeout
	if withTimeout == nil {
		withTimeout = context.WithTimeout
	}
	runCtx, cancel := withTimeout(ctx, spec.timeout)
	defer cancel()
	var waitErr error
	select {
	case waitErr = <-done:
	case <-runCtx.Done():
		signal(procgroup.Term)
		grace := time.NewTimer(spec.grace)
		select {
		case waitErr = <-done:
		case <-grace.C:
			signal(procgroup.Kill)
			waitErr = <-done
		}
		grace.Stop()
	}
	if !out.contain.Namespaced() {
		killTagged(spec.mark)
		out.swept = procgroup.Sweep()
	}

	escaped := false
	grace := time.NewTimer(spec.grace)
	select {
	case <-readDone:
	case <-grace.C:
		escaped = true
		pr.Close() // unblocks the reader
		<-readDone
	}
	grace.Stop()
	pr.Close()

	out.text = buf.String()
	if escaped {
		out.text += "\n[a process that left the command's process group kept the output open; it may still be running]"
	}
	var exitErr *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &exitErr):
		out.exitCode = exitErr.ExitCode()
		out.status = exitErr.String()
		if out.exitCode < 0 {
			out.status = "killed by " + out.status
		}
	default:
		out.exitCode = -1
		out.status = waitErr.Error()
	}
	if err := ctx.Err(); err != nil {
		return out, err
	}
	out.timedOut = runCtx.Err() != nil
	return out, nil
}

// headTail keeps the first and last max/2 bytes written to it and counts
// the rest.
type headTail struct {
	max   int
	head  []byte
	tail  []byte
	total int64
}

func (h *headTail) Write(p []byte) (int, error) {
	n := len(p)
	h.total += int64(n)
	headMax := h.max / 2
	if room := headMax - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	tailMax := h.max - headMax
	h.tail = append(h.tail, p...)
	if len(h.tail) > 2*tailMax+4096 {
		h.tail = append(h.tail[:0:0], h.tail[len(h.tail)-tailMax:]...)
	}
	return n, nil
}

var ansiEscape = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)
})

func cleanOutput(b []byte) string {
	s := ansiEscape().ReplaceAllString(string(b), "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return cleanText(s)
}

// String returns the kept output, with a note when some was cut.
func (h *headTail) String() string {
	tailMax := h.max - h.max/2
	if h.total <= int64(h.max) {
		return cleanOutput(append(append([]byte(nil), h.head...), h.tail...))
	}
	tail := h.tail[len(h.tail)-tailMax:]
	cut := h.total - int64(len(h.head)) - int64(len(tail))
	return fmt.Sprintf("%s\n… [output cut: %d of %d bytes omitted; showing the first %d and the last %d] …\n%s",
		cleanOutput(h.head), cut, h.total, len(h.head), len(tail), cleanOutput(tail))
}
