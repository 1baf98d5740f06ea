package browser

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// tab is one page of the browser, numbered for the model.
type tab struct {
	id     int
	ctx    context.Context // the tab's chromedp context
	cancel context.CancelFunc
	t      *chromedp.Target
	gone   atomic.Bool // the page closed itself

	mu sync.Mutex // guards the fields below
	// world is the isolated world of the last snapshot, where page.js and
	// its numbered elements live; 0 before the first.
	world runtime.ExecutionContextID
	// status is the HTTP status of the main document's last response.
	status int64
}

func (t *tab) frameID() cdp.FrameID { return cdp.FrameID(t.t.TargetID) }

// newTab opens a tab (about:blank) and makes it current. It is called
// with s.mu held.
func (s *Session) newTab(ctx context.Context, r *running) (*tab, error) {
	r.tabsMu.Lock()
	open := len(r.tabs) + r.pending
	r.tabsMu.Unlock()
	if open >= s.opts.MaxTabs {
		return nil, fmt.Errorf("%d tabs are open, the most allowed: close one first (close_tab)", open)
	}
	tctx, cancel := chromedp.NewContext(r.rootCtx)
	t := &tab{ctx: tctx, cancel: cancel}
	if err := s.attach(ctx, r, t); err != nil {
		cancel()
		return nil, err
	}
	r.tabsMu.Lock()
	t.id = r.nextID
	r.nextID++
	r.tabs = append(r.tabs, t)
	r.cur = t
	r.tabsMu.Unlock()
	return t, nil
}

// attach opens or attaches the tab's target and sets it up: file choosers
// intercepted (so no file is ever chosen), and its events watched.
func (s *Session) attach(ctx context.Context, r *running, t *tab) error {
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(t.ctx) }()
	select {
	case err := <-done:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	c := chromedp.FromContext(t.ctx)
	t.t = c.Target
	if err := chromedp.Listen(t.ctx, func(ev any) { s.onTabEvent(r, t, ev) }); err != nil {
		return err
	}
	if _, err := chromedp.Call(t.ctx, page.SetInterceptFileChooserDialog, page.SetInterceptFileChooserDialogParams{Enabled: true}); err != nil {
		return fmt.Errorf("refusing file uploads: %w", err)
	}
	if ch, err := chromedp.Detached(t.ctx); err == nil {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			select {
			case <-ch:
				t.gone.Store(true)
			case <-t.ctx.Done():
			}
		}()
	}
	return nil
}

// adopt takes a tab a page opened (window.open, a link with a target) as
// one of the session's, or closes it when MaxTabs are open already.
func (s *Session) adopt(r *running, info *target.Info) {
	r.tabsMu.Lock()
	if r.adopted[info.TargetID] || r.rootCtx.Err() != nil {
		r.tabsMu.Unlock()
		return
	}
	r.adopted[info.TargetID] = true
	open := len(r.tabs) + r.pending
	if open < s.opts.MaxTabs {
		r.pending++ // a place kept while it attaches
	}
	r.tabsMu.Unlock()
	if open >= s.opts.MaxTabs {
		ctx, cancel := context.WithTimeout(r.rootCtx, s.opts.ActionTimeout)
		defer cancel()
		_, _ = chromedp.CallBrowser(ctx, target.CloseTarget, target.CloseTargetParams{TargetID: info.TargetID})
		what := "a new tab"
		if info.URL != "" && info.URL != "about:blank" {
			what += " (" + clip(info.URL, 200) + ")"
		}
		s.note(fmt.Sprintf("a page opened %s; it was closed: %d tabs are open, the most allowed", what, open))
		select {
		case r.popups <- nil: // the action that caused it can report it
		default:
		}
		return
	}
	tctx, cancel := chromedp.NewContext(r.rootCtx, chromedp.WithTargetID(info.TargetID))
	r.loads.Add(1)
	t := &tab{ctx: tctx, cancel: cancel}
	ctx, cancelAttach := context.WithTimeout(r.rootCtx, s.opts.ActionTimeout)
	err := s.attach(ctx, r, t)
	cancelAttach()
	r.tabsMu.Lock()
	r.pending--
	if err != nil {
		r.tabsMu.Unlock()
		cancel()
		s.opts.Logger.Debug("browser: a new tab could not be attached", "url", info.URL, "err", err)
		return
	}
	if r.rootCtx.Err() != nil {
		r.tabsMu.Unlock()
		cancel()
		return
	}
	t.id = r.nextID
	r.nextID++
	r.tabs = append(r.tabs, t)
	r.tabsMu.Unlock()
	select {
	case r.popups <- t:
	default:
	}
}

// onTabEvent runs on the tab's reading goroutine: it must not block nor
// call the browser (dialogs are answered from another goroutine).
func (s *Session) onTabEvent(r *running, t *tab, ev any) {
	switch ev := ev.(type) {
	case *page.EventJavascriptDialogOpening:
		// alert, confirm, prompt and beforeunload: answered at once, as
		// nobody can click them; a confirm or a prompt is declined, a
		// page that asks before unloading is left.
		accept := ev.Type == page.DialogTypeAlert || ev.Type == page.DialogTypeBeforeunload
		s.note(fmt.Sprintf("the page showed a %s dialog (%q); it was %s", ev.Type, clip(ev.Message, 200), map[bool]string{true: "accepted", false: "dismissed"}[accept]))
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			ctx, cancel := context.WithTimeout(t.ctx, s.opts.ActionTimeout)
			defer cancel()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept})
		}()
	case *page.EventFileChooserOpened:
		s.note("the page asked for a file to upload; refused: uploading files is off")
	case *page.EventFrameNavigated:
		if ev.Frame != nil && ev.Frame.ParentID == "" {
			t.mu.Lock()
			t.world = 0
			t.mu.Unlock()
			if ev.Frame.URL != "about:blank" {
				r.loads.Add(1)
			}
		}
	case *network.EventResponseReceived:
		if ev.Type == network.ResourceTypeDocument && ev.FrameID == t.frameID() && ev.Response != nil {
			t.mu.Lock()
			t.status = ev.Response.Status
			t.mu.Unlock()
		}
	}
}

// current is the current tab, or nil when none is open; a tab that
// closed itself is dropped first.
func (r *running) current() *tab {
	r.tabsMu.Lock()
	defer r.tabsMu.Unlock()
	r.pruneLocked()
	return r.cur
}

// pruneLocked drops the tabs whose page closed itself.
func (r *running) pruneLocked() {
	kept := r.tabs[:0]
	for _, t := range r.tabs {
		if t.gone.Load() {
			t.cancel()
			continue
		}
		kept = append(kept, t)
	}
	clear(r.tabs[len(kept):])
	r.tabs = kept
	if r.cur != nil && r.cur.gone.Load() {
		r.cur = nil
	}
	if r.cur == nil && len(r.tabs) > 0 {
		r.cur = r.tabs[len(r.tabs)-1]
	}
}

// tabList is the open tabs, in order of opening.
func (r *running) tabList() []*tab {
	r.tabsMu.Lock()
	defer r.tabsMu.Unlock()
	r.pruneLocked()
	return append([]*tab(nil), r.tabs...)
}

// find returns tab id.
func (r *running) find(id int) *tab {
	for _, t := range r.tabList() {
		if t.id == id {
			return t
		}
	}
	return nil
}

// closeTab closes t; the current tab becomes the last one opened.
func (r *running) closeTab(t *tab) {
	r.tabsMu.Lock()
	for i, x := range r.tabs {
		if x == t {
			r.tabs = append(r.tabs[:i], r.tabs[i+1:]...)
			break
		}
	}
	if r.cur == t {
		r.cur = nil
		if len(r.tabs) > 0 {
			r.cur = r.tabs[len(r.tabs)-1]
		}
	}
	r.tabsMu.Unlock()
	t.cancel()
}

func (r *running) setCurrent(t *tab) {
	r.tabsMu.Lock()
	r.cur = t
	r.tabsMu.Unlock()
}

// location is the title and URL of the page t shows.
func (t *tab) location(ctx context.Context) (title, u string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	h, err := cdp.Call(ctx, t.t, page.GetNavigationHistory, cdp.Empty{})
	if err != nil {
		return "", "", err
	}
	if h.CurrentIndex < 0 || int(h.CurrentIndex) >= len(h.Entries) {
		return "", "", fmt.Errorf("the tab has no current page")
	}
	e := h.Entries[h.CurrentIndex]
	return e.Title, e.URL, nil
}
