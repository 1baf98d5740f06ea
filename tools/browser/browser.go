package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/target"

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
	// extract_content call returns (default tools.DefaultFetchMaxChars, 9000: with its header it fits in what the agent shows the model of one result).
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
	// busy counts a launch in progress and a stop in progress: every Close
	// waits for them, so that no caller of Close (a server's session end
	// and its command's exit, at once) returns while a browser still runs.
	busy sync.WaitGroup
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
	// unspare ends the exec tools' sparing of its processes (see
	// procgroup.SpareTagged).
	unspare func()

	tabsMu  sync.Mutex
	tabs    []*tab
	cur     *tab
	nextID  int
	popups  chan *tab     // tabs the pages opened (nil: one refused), for the action that caused them
	opening chan struct{} // a page opened a tab, which is being adopted
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
	if r != nil {
		s.busy.Add(1)
	}
	s.runMu.Unlock()
	if r != nil {
		r.stop(s.opts.Logger)
		s.busy.Done()
	}
	s.busy.Wait()
}

// running returns the started browser, starting it when none is; it is
// called with s.mu held, and fails once the session is closed.
func (s *Session) running(ctx context.Context) (*running, error) {
	s.runMu.Lock()
	r, closed := s.run, s.closed
	if !closed && r == nil {
		s.busy.Add(1) // a Close from now on waits for this launch
	}
	s.runMu.Unlock()
	switch {
	case closed:
		return nil, errClosed
	case r != nil:
		return r, nil
	}
	defer s.busy.Done()
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
		select {
		case r.opening <- struct{}{}:
		default:
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

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
