package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/deepgraph/deepgraph/internal/procgroup"
	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/search/netguard"
	"github.com/deepgraph/deepgraph/tools"
)

// Name is the browser tool's name.
const Name = "browser"

// Defaults of Options.
const (
	DefaultActionTimeout   = 30 * time.Second
	DefaultMaxPages        = 50
	DefaultMaxTabs         = 5
	DefaultMaxStateChars   = 8000
	DefaultMaxElements     = 50
	DefaultMaxContentChars = tools.DefaultFetchMaxChars
	DefaultWidth           = 1280
	DefaultHeight          = 900
)

// startTimeout bounds Chromium's start, which a loaded machine makes slow.
const startTimeout = 60 * time.Second

// HTMLReader turns a rendered page into its main content as Markdown;
// *search.Reader implements it (ReadHTML).
type HTMLReader interface {
	ReadHTML(ctx context.Context, pageURL, html string) (*search.Page, error)
}

// Options configure a Session. Zero values take the defaults named on each
// field.
type Options struct {
	// Chromium is the browser executable; "" finds one (FindChromium).
	Chromium string
	// Guard is the SSRF policy every request of the browser passes — the
	// same as fetch_page's: public addresses only unless opened. Its
	// Resolver, when set, resolves every host the browser reaches.
	Guard netguard.Config
	// Reader turns pages into Markdown for extract_content. Required.
	Reader HTMLReader
	// ActionTimeout bounds one action, page loads included (default 30s).
	ActionTimeout time.Duration
	// MaxPages bounds the pages a session loads — navigations of its tabs
	// and new tabs (default 50); past it, actions that load a page are
	// refused.
	MaxPages int
	// MaxTabs bounds the tabs open at once (default 5); a page that opens
	// one more has it closed at once.
	MaxTabs int
	// MaxStateChars bounds the page state shown to the model (default
	// 8000 characters), MaxElements the interactive elements it lists
	// (default 50; those in view first), MaxContentChars what one
	// extract_content call returns (default 20000).
	MaxStateChars   int
	MaxElements     int
	MaxContentChars int
	// Width and Height are the window's size in CSS pixels (default
	// 1280×900).
	Width, Height int
	// NoSandbox runs Chromium without its sandbox, which it needs when the
	// sandbox cannot work (containers without user namespaces). Running as
	// root always does this: Chromium refuses its sandbox to root.
	NoSandbox bool
	// Slots, when set, bounds the browsers running at once among the
	// sessions that share it (a server's runs).
	Slots *Slots
	// StateInResult appends the page state to every action's result, for
	// callers that do not show State before each step (MCP clients).
	StateInResult bool
	// Logger receives debug records; nil discards them.
	Logger *slog.Logger
}

// Session is one headless Chromium for one run, offered to a model as the
// browser tool. The browser starts at the first action, with a fresh
// profile in a temporary directory; Close stops it, kills what it started
// and removes the directory. A Session is safe for concurrent use: actions
// run one at a time.
type Session struct {
	opts     Options
	chromium string
	guard    *netguard.Guard
	tool     *tools.FuncTool[Args]
	// extraFlags are further Chromium flags (tests: an origin treated as
	// secure, so that the permission APIs exist on its pages).
	extraFlags map[string]string

	mu sync.Mutex // serialises actions and State

	runMu  sync.Mutex // guards run and closed
	closed bool
	run    *running // the started browser; nil before the first action
	// last is the last action's result, for the state.
	last string

	noteMu sync.Mutex
	notes  []string // what happened beside the actions: dialogs, refusals
}

// running is a started browser.
type running struct {
	dir       string // the session's directory: profile, home, tmp
	tmp       string // Chromium's TMPDIR
	extra     string // its own directory in /tmp, when dir is too deep
	proxy     *proxy
	release   func() // gives back the slot
	cancel    context.CancelFunc
	rootCtx   context.Context // the browser's first, hidden tab
	rootStop  context.CancelFunc
	allocStop context.CancelFunc
	pgid      int
	tag       string // DEEPGRAPH_BROWSER value of its processes

	tabsMu  sync.Mutex
	tabs    []*tab
	cur     *tab
	nextID  int
	popups  chan *tab // tabs the pages opened (nil: one refused), for the action that caused them
	adopted map[target.ID]bool
	pending int          // tabs being adopted
	loads   atomic.Int64 // main-frame page loads of every tab
	wg      sync.WaitGroup
}

// New checks opts and finds Chromium; the browser starts at the first
// action. Without Chromium the error matches ErrNoChromium and says how to
// install it.
func New(opts Options) (*Session, error) {
	if opts.Reader == nil {
		return nil, errors.New("browser: Options.Reader is required (search.NewReader makes one)")
	}
	path, err := FindChromium(opts.Chromium)
	if err != nil {
		return nil, err
	}
	g, err := netguard.New(opts.Guard)
	if err != nil {
		return nil, fmt.Errorf("browser: %w", err)
	}
	opts.ActionTimeout = orDefault(opts.ActionTimeout, DefaultActionTimeout)
	opts.MaxPages = orDefault(opts.MaxPages, DefaultMaxPages)
	opts.MaxTabs = orDefault(opts.MaxTabs, DefaultMaxTabs)
	opts.MaxStateChars = orDefault(opts.MaxStateChars, DefaultMaxStateChars)
	opts.MaxElements = orDefault(opts.MaxElements, DefaultMaxElements)
	opts.MaxContentChars = orDefault(opts.MaxContentChars, DefaultMaxContentChars)
	opts.Width = orDefault(opts.Width, DefaultWidth)
	opts.Height = orDefault(opts.Height, DefaultHeight)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Session{opts: opts, chromium: path, guard: g}
	if s.tool, err = newTool(s); err != nil {
		return nil, err
	}
	return s, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Chromium is the executable the session runs.
func (s *Session) Chromium() string { return s.chromium }

// Close stops the browser, kills every process it started and removes its
// profile. It is safe to call more than once, and from another goroutine
// while an action runs: the action then fails.
func (s *Session) Close() {
	s.runMu.Lock()
	s.closed = true
	r := s.run
	s.run = nil
	s.runMu.Unlock()
	if r != nil {
		r.stop(s.opts.Logger)
	}
}

// running returns the started browser, starting it when none is; it is
// called with s.mu held, and fails once the session is closed.
func (s *Session) running(ctx context.Context) (*running, error) {
	s.runMu.Lock()
	r, closed := s.run, s.closed
	s.runMu.Unlock()
	switch {
	case closed:
		return nil, errClosed
	case r != nil:
		return r, nil
	}
	r, err := s.launch(ctx)
	if err != nil {
		return nil, err
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.closed {
		r.stop(s.opts.Logger)
		return nil, errClosed
	}
	s.run = r
	return r, nil
}

// errClosed: the session was closed.
var errClosed = errors.New("the browser is closed: the run is ending")

// current returns the started browser, or nil.
func (s *Session) current() *running {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.closed {
		return nil
	}
	return s.run
}

// launch starts a browser.
//
// It waits for a slot (Options.Slots) at most ActionTimeout, and for
// Chromium to start at most startTimeout.
func (s *Session) launch(ctx context.Context) (_ *running, err error) {
	slotCtx, cancelSlot := context.WithTimeout(ctx, s.opts.ActionTimeout)
	release, err := s.opts.Slots.acquire(slotCtx)
	cancelSlot()
	if err != nil {
		return nil, err
	}
	r := &running{release: release, popups: make(chan *tab, 8), adopted: map[target.ID]bool{}, nextID: 1}
	defer func() {
		if err != nil {
			r.stop(s.opts.Logger)
		}
	}()
	sweep(s.opts.Logger)
	if r.dir, err = os.MkdirTemp("", dirPrefix); err != nil {
		return nil, fmt.Errorf("creating the browser's profile directory: %w", err)
	}
	for _, d := range []string{"profile", "home", "tmp"} {
		if err := os.Mkdir(filepath.Join(r.dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("creating the browser's profile directory: %w", err)
		}
	}
	// Chromium puts a socket in its TMPDIR, and a socket's path is short
	// (108 bytes): under a deep temporary directory, TMPDIR is a directory
	// of its own in /tmp.
	r.tmp = filepath.Join(r.dir, "tmp")
	if len(r.tmp) > maxTmpLen && runtime.GOOS != "windows" {
		if r.extra, err = os.MkdirTemp("/tmp", "dgb-"); err != nil {
			return nil, fmt.Errorf("creating the browser's temporary directory: %w", err)
		}
		r.tmp = r.extra
	}
	owner := strconv.Itoa(os.Getpid()) + "\n" + r.extra
	if err := os.WriteFile(filepath.Join(r.dir, ownerFile), []byte(owner), 0o600); err != nil {
		return nil, fmt.Errorf("creating the browser's profile directory: %w", err)
	}
	if r.proxy, err = startProxy(s.guard, s.opts.Logger); err != nil {
		return nil, err
	}
	r.tag = filepath.Base(r.dir)
	life, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	allocCtx, allocStop := chromedp.NewExecAllocator(life, s.allocatorOptions(r)...)
	r.allocStop = allocStop
	r.rootCtx, r.rootStop = chromedp.NewContext(allocCtx)

	startCtx, cancelStart := context.WithTimeout(ctx, startTimeout)
	defer cancelStart()
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(r.rootCtx) }()
	select {
	case err = <-started:
	case <-startCtx.Done():
		err = startCtx.Err()
	}
	if err != nil {
		return nil, s.startError(err)
	}
	if b := chromedp.FromContext(r.rootCtx).Browser; b != nil && b.Process() != nil {
		r.pgid = b.Process().Pid
	}
	if err := s.configure(ctx, r); err != nil {
		return nil, fmt.Errorf("setting up the browser: %w", err)
	}
	s.opts.Logger.Debug("browser: started", "chromium", s.chromium, "pid", r.pgid, "profile", r.dir, "proxy", r.proxy.addr())
	return r, nil
}

// startError explains a browser that did not start.
func (s *Session) startError(err error) error {
	msg := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("Chromium (%s) did not start within %s", s.chromium, startTimeout)
	case strings.Contains(msg, "No usable sandbox") || strings.Contains(msg, "setuid sandbox"):
		return fmt.Errorf("Chromium (%s) cannot use its sandbox here (no user namespaces): set browser.no_sandbox: true, "+
			"or better run in a container or VM that allows it: %w", s.chromium, err)
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return fmt.Errorf("%w: %s cannot run (%v); %s", ErrNoChromium, s.chromium, ee.Err, InstallHint)
	}
	return fmt.Errorf("Chromium (%s) did not start: %w", s.chromium, err)
}

// allocatorOptions are Chromium's flags and environment: headless, a fresh
// profile, every request through the proxy, nothing phoning home, and
// WebRTC kept off the network except through the proxy.
func (s *Session) allocatorOptions(r *running) []chromedp.ExecAllocatorOption {
	home := filepath.Join(r.dir, "home")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(s.chromium),
		chromedp.UserDataDir(filepath.Join(r.dir, "profile")),
		chromedp.WindowSize(s.opts.Width, s.opts.Height),
		chromedp.DisableGPU,
		chromedp.ProxyServer("http://"+r.proxy.addr()),
		// Loopback goes through the proxy too (Chromium bypasses it for
		// loopback by default), so the guard judges it.
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("deny-permission-prompts", true),
		chromedp.Flag("disable-notifications", true),
		chromedp.Flag("use-mock-keychain", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("hide-scrollbars", true),
		// Pages may not open windows on their own; a click still can.
		chromedp.Flag("disable-popup-blocking", false),
		// The browser's environment is rebuilt: its home, caches and
		// crash reports stay in the session's directory, and none of the
		// program's variables (API keys) reach it.
		chromedp.NoInheritEnv,
		chromedp.Env(browserEnv(r, home)...),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			procgroup.Configure(cmd)
			dieWithParent(cmd)
		}),
	)
	for k, v := range s.extraFlags {
		opts = append(opts, chromedp.Flag(k, v))
	}
	if s.opts.NoSandbox || os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	return opts
}

// tagVar marks the processes of a session's browser, so that the ones
// that leave its process group are found and killed too.
const tagVar = "DEEPGRAPH_BROWSER"

func browserEnv(r *running, home string) []string {
	env := []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"TMPDIR=" + r.tmp,
		"LANG=en_US.UTF-8",
		tagVar + "=" + r.tag,
	}
	for _, k := range []string{"PATH", "TZ", "FONTCONFIG_PATH", "FONTCONFIG_FILE", "LD_LIBRARY_PATH"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// deniedPermissions are the permissions no page gets: notifications,
// location, camera, microphone and the other device and system accesses.
var deniedPermissions = []string{
	"geolocation", "notifications", "camera", "microphone", "midi", "clipboard-read",
	"display-capture", "push", "background-sync", "persistent-storage", "screen-wake-lock",
	"idle-detection", "local-fonts", "window-management", "storage-access", "nfc",
	"speaker-selection", "keyboard-lock", "pointer-lock", "local-network-access",
}

// essentialDenials must be set, or the browser does not start.
var essentialDenials = []string{"geolocation", "notifications", "camera", "microphone"}

// configure sets the browser-wide refusals (downloads, permissions) and
// starts watching for tabs the pages open.
func (s *Session) configure(ctx context.Context, r *running) error {
	_, err := chromedp.CallBrowser(r.rootCtx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorDeny, EventsEnabled: new(true)})
	if err != nil {
		return fmt.Errorf("refusing downloads: %w", err)
	}
	for _, name := range deniedPermissions {
		_, err := chromedp.CallBrowser(r.rootCtx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: name}, Setting: browser.PermissionSettingDenied})
		if err != nil && contains(essentialDenials, name) {
			return fmt.Errorf("refusing the %s permission: %w", name, err)
		}
	}
	if err := chromedp.ListenBrowser(r.rootCtx, func(ev any) { s.onBrowserEvent(r, ev) }); err != nil {
		return err
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// onBrowserEvent runs on the browser's reading goroutine: it must not
// block nor call the browser.
func (s *Session) onBrowserEvent(r *running, ev any) {
	switch ev := ev.(type) {
	case *browser.EventDownloadWillBegin:
		s.note(fmt.Sprintf("a download of %q (%s) was refused: downloads are off", clip(ev.SuggestedFilename, 80), clip(ev.URL, 200)))
	case *target.EventTargetCreated:
		info := ev.TargetInfo
		if info.Type != "page" || info.OpenerID == "" {
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			s.adopt(r, info)
		}()
	}
}

// note records something that happened beside the actions, for the next
// action's result.
func (s *Session) note(text string) {
	s.noteMu.Lock()
	defer s.noteMu.Unlock()
	if len(s.notes) < 20 {
		s.notes = append(s.notes, text)
	}
}

func (s *Session) takeNotes() []string {
	s.noteMu.Lock()
	defer s.noteMu.Unlock()
	out := s.notes
	s.notes = nil
	return out
}

// stop ends the browser: the tabs, then the browser process (chromedp
// kills it and waits for it), then whatever it started that is still
// there — its process group, and on Linux the processes that carry its
// tag — and removes its directory.
func (r *running) stop(logger *slog.Logger) {
	if r.rootStop != nil {
		r.tabsMu.Lock()
		tabs := r.tabs
		r.tabs, r.cur = nil, nil
		r.tabsMu.Unlock()
		for _, t := range tabs {
			t.cancel()
		}
		r.rootStop()
	}
	if r.allocStop != nil {
		r.allocStop()
	}
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
	if r.pgid > 0 {
		_ = procgroup.SignalGroup(r.pgid, procgroup.Kill)
	}
	if r.tag != "" {
		killTagged(r.tag)
	}
	if r.proxy != nil {
		r.proxy.close()
	}
	for _, d := range []string{r.extra, r.dir} {
		if d == "" {
			continue
		}
		if err := removeAll(d); err != nil {
			logger.Warn("browser: the profile directory could not be removed", "dir", d, "err", err)
		}
	}
	if r.release != nil {
		r.release()
	}
}

// The session's directory: dirPrefix and random letters, in the temporary
// directory, holding in ownerFile the owner's process id and, on a second
// line, the directory Chromium had in /tmp, if any.
const (
	dirPrefix = "deepgraph-browser-"
	ownerFile = "owner"
	// maxTmpLen is the longest TMPDIR whose Chromium socket path fits.
	maxTmpLen = 60
)

// sweep removes the directories of sessions whose program died without
// removing them (killed with SIGKILL: nothing of it runs after), and kills
// what is left of their browsers — nothing, normally, as their browsers
// died with them. A directory whose owner is unknown or alive is left.
func sweep(logger *slog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		first, extra, _ := strings.Cut(string(b), "\n")
		pid, err := strconv.Atoi(strings.TrimSpace(first))
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		killTagged(filepath.Base(d))
		if extra = strings.TrimSpace(extra); strings.HasPrefix(filepath.Base(extra), "dgb-") {
			_ = removeAll(extra)
		}
		if err := removeAll(d); err == nil {
			logger.Debug("browser: removed the directory of a browser whose program died", "dir", d, "pid", pid)
		}
	}
}

// removeAll removes dir, trying again briefly: a process that is being
// killed can still write in it.
func removeAll(dir string) error {
	var err error
	for range 20 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return err
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
