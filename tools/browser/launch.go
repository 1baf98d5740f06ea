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
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/deepgraph/deepgraph/internal/procgroup"
)

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
	r := &running{release: release, popups: make(chan *tab, 8), opening: make(chan struct{}, 8), adopted: map[target.ID]bool{}, nextID: 1}
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
	// Where the exec tools sweep the orphans this process adopts (no PID
	// namespaces), Chromium — a child this process did not start through
	// procgroup — must not be taken for one.
	r.unspare = procgroup.SpareTagged(tagVar + "=" + r.tag)
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
	if r.unspare != nil {
		r.unspare()
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
