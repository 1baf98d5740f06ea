package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/search/netguard"
	"github.com/deepgraph/deepgraph/tools"
)

// outcome is what an action did, before the notes of the page and the
// network are added.
type outcome struct {
	text    string
	failed  bool
	images  []schemas.Image
	sources []tools.Source
	// loads says the action may have loaded a page: the page it ends on
	// is reported (and becomes a source when it loaded) when it did (w
	// saw a navigation or a new tab), or when w is nil (a tab switch).
	loads bool
	w     *watch
}

func done(format string, args ...any) outcome { return outcome{text: fmt.Sprintf(format, args...)} }

func fail(format string, args ...any) outcome {
	return outcome{text: fmt.Sprintf(format, args...), failed: true}
}

// readOnly are the actions allowed once the page limit is reached: they
// load no page.
var readOnly = map[string]bool{ActionScrollDown: true, ActionScrollUp: true, ActionSwitchTab: true, ActionCloseTab: true,
	ActionExtractContent: true, ActionScreenshot: true, ActionWaitFor: true}

// act runs one action under the session's lock and its time bound.
func (s *Session) act(ctx context.Context, a Args) (tools.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.running(ctx)
	switch {
	case errors.Is(err, errClosed):
		return tools.Failf("%v", err), nil
	case err != nil && ctx.Err() != nil:
		return tools.Result{}, ctx.Err()
	case err != nil:
		return tools.Failf("the browser could not start: %v", err), nil
	}
	actx, cancel := context.WithTimeout(ctx, s.opts.ActionTimeout)
	defer cancel()
	if !readOnly[a.Action] && int(r.loads.Load()) >= s.opts.MaxPages {
		return s.result(r, fail("refused: this run has loaded %d pages, the most allowed; read what is open (extract_content, screenshot) or finish with what you have", s.opts.MaxPages)), nil
	}
	loadBy := time.Now().Add(s.opts.ActionTimeout * 3 / 4)
	var o outcome
	switch a.Action {
	case ActionGoToURL:
		o = s.goTo(actx, r, a.URL, false, loadBy)
	case ActionOpenTab:
		o = s.goTo(actx, r, a.URL, true, loadBy)
	case ActionClick:
		o = s.click(actx, r, a.Index, loadBy)
	case ActionInputText:
		o = s.inputText(actx, r, a, loadBy)
	case ActionSelectOption:
		o = s.selectOption(actx, r, a, loadBy)
	case ActionScrollDown, ActionScrollUp:
		o = s.scroll(actx, r, a)
	case ActionGoBack:
		o = s.goBack(actx, r, loadBy)
	case ActionSwitchTab:
		o = s.switchTab(actx, r, a.TabID)
	case ActionCloseTab:
		o = s.closeTab(r, a.TabID)
	case ActionExtractContent:
		o = s.extract(actx, r, a)
	case ActionScreenshot:
		o = s.screenshot(actx, r)
	case ActionWaitFor:
		o = s.waitFor(actx, r, a)
	default:
		o = fail("unknown action %q; the actions are %s", a.Action, strings.Join(Actions(), ", "))
	}
	if ctx.Err() != nil {
		return tools.Failf("the browser action was stopped: the run was cancelled"), ctx.Err()
	}
	return s.result(r, o), nil
}

// result adds to an action's outcome where it ended (for actions that can
// load a page), what happened beside it (dialogs, refused downloads and
// uploads, tabs closed) and the requests the guard refused; it keeps the
// summary for the state.
func (s *Session) result(r *running, o outcome) tools.Result {
	var b strings.Builder
	b.WriteString(o.text)
	if o.loads && (o.w == nil || o.w.startedMain || o.w.popup != nil) {
		if t := r.current(); t != nil {
			s.reportPage(&b, t, o)
			if src, ok := s.source(t, o); ok {
				o.sources = append(o.sources, src)
			}
		}
	}
	for _, n := range s.takeNotes() {
		b.WriteString("\nNote: " + n)
	}
	refused, more := r.proxy.takeRefusals()
	for _, rf := range refused {
		fmt.Fprintf(&b, "\nRefused by the network guard: %s — %s", clip(rf.Target, 200), rf.Reason)
	}
	if more > 0 {
		fmt.Fprintf(&b, "\n(%d more requests refused)", more)
	}
	text := b.String()
	s.last = clip(text, 600)
	if o.failed {
		s.last = "Error: " + s.last
	}
	res := tools.Result{Images: o.images, Sources: o.sources}
	if o.failed {
		res.Error = text
	} else {
		res.Output = text
	}
	if s.opts.StateInResult {
		if st := s.stateOf(context.Background(), r); st != "" {
			res.Output = strings.TrimSpace(res.Output + "\n\n" + st)
		}
	}
	return res
}

// reportPage says where the tab is after an action that can load a page.
func (s *Session) reportPage(b *strings.Builder, t *tab, o outcome) {
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	info, err := cdp.Call(ctx, t.t, page.GetNavigationHistory, cdp.Empty{})
	if err != nil || info.CurrentIndex < 0 || int(info.CurrentIndex) >= len(info.Entries) {
		return
	}
	e := info.Entries[info.CurrentIndex]
	fmt.Fprintf(b, "\nNow on tab %d: %q %s", t.id, clip(e.Title, 120), clip(e.URL, 300))
	t.mu.Lock()
	status := t.status
	t.mu.Unlock()
	if status >= 400 {
		fmt.Fprintf(b, " (HTTP %d)", status)
	}
	if o.w != nil && o.w.timedOut {
		fmt.Fprintf(b, "\nThe page did not finish loading within %s and was stopped; what had loaded is shown.", (s.opts.ActionTimeout * 3 / 4).Round(time.Second))
	}
}

// source is the page t shows, as a source of what the model reads, when
// it loaded well.
func (s *Session) source(t *tab, o outcome) (tools.Source, bool) {
	if o.failed || (o.w != nil && o.w.timedOut) {
		return tools.Source{}, false
	}
	t.mu.Lock()
	status := t.status
	t.mu.Unlock()
	if status >= 400 {
		return tools.Source{}, false
	}
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	info, err := cdp.Call(ctx, t.t, page.GetNavigationHistory, cdp.Empty{})
	if err != nil || info.CurrentIndex < 0 || int(info.CurrentIndex) >= len(info.Entries) {
		return tools.Source{}, false
	}
	e := info.Entries[info.CurrentIndex]
	if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return tools.Source{}, false
	}
	return tools.Source{URL: e.URL, Title: clip(e.Title, 200)}, true
}

// checkURL refuses what the browser must not load: anything but http(s),
// and addresses the guard refuses (the proxy would refuse them too; this
// says why before trying).
func (s *Session) checkURL(ctx context.Context, raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", errors.New("the url is empty")
	}
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL", clip(raw, 200))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("refused: only http and https pages can be opened, not %s:", u.Scheme)
	}
	if err := s.guard.CheckURL(ctx, u); err != nil {
		return "", fmt.Errorf("cannot open %s: %s", u.Redacted(), guardReason(err))
	}
	return u.String(), nil
}

// goTo loads raw in the current tab, or in a new one.
func (s *Session) goTo(ctx context.Context, r *running, raw string, newTab bool, loadBy time.Time) outcome {
	u, err := s.checkURL(ctx, raw)
	if err != nil {
		return fail("%v", err)
	}
	t := r.current()
	if newTab || t == nil {
		if t, err = s.newTab(ctx, r); err != nil {
			return fail("cannot open a tab: %v", err)
		}
	}
	w := s.watch(r, t)
	nav, err := cdp.Call(ctx, t.t, page.Navigate, page.NavigateParams{URL: u})
	o := outcome{loads: true, w: w}
	switch {
	case err != nil && ctx.Err() != nil:
		w.stop()
		s.stopLoading(t)
		w.timedOut = true
		o.text = fmt.Sprintf("Opened %s.", u)
		return o
	case err != nil:
		w.stop()
		return fail("cannot open %s: %v", u, err)
	case nav.IsDownload:
		w.stop()
		return fail("%s is a file to download; downloads are refused", u)
	case nav.ErrorText != "":
		w.stop()
		o.failed = true
		o.text = fmt.Sprintf("%s did not load: %s", u, nav.ErrorText)
		return o
	}
	w.startedMain = true
	w.timedOut = !s.waitLoad(ctx, t, w.loaded, loadBy)
	w.stop()
	s.quiet(ctx, t)
	o.text = fmt.Sprintf("Opened %s.", u)
	if newTab {
		o.text = fmt.Sprintf("Opened %s in a new tab (%d).", u, t.id)
	}
	return o
}

// tabFor is the current tab, or the outcome saying there is none.
func (s *Session) tabFor(r *running) (*tab, *outcome) {
	t := r.current()
	if t == nil {
		o := fail("no page is open: use go_to_url first")
		return nil, &o
	}
	return t, nil
}

func elementIndex(i *int) (int, *outcome) {
	if i == nil {
		o := fail("this action needs index: the number of an element in the page state")
		return 0, &o
	}
	return *i, nil
}

// jsFailure maps what a page call returned to an outcome.
func jsFailure(err error, jsErr string) *outcome {
	switch {
	case errors.Is(err, errStale):
		o := fail("%v", errStale)
		return &o
	case err != nil:
		o := fail("the action failed: %v", err)
		return &o
	case jsErr != "":
		o := fail("%s", jsErr)
		return &o
	}
	return nil
}

// afterAction waits for what the action set off and returns its outcome.
func (s *Session) afterAction(ctx context.Context, r *running, w *watch, loadBy time.Time, text string) outcome {
	s.settle(ctx, r, w, loadBy)
	o := outcome{text: text, loads: true, w: w}
	if w.popup != nil {
		o.text += fmt.Sprintf(" It opened a new tab (%d), now the current one.", w.popup.id)
		s.quiet(ctx, w.popup)
		return o
	}
	s.quiet(ctx, w.t)
	return o
}

// click clicks element i with the mouse, as a user would; an element that
// another covers is clicked by a script instead, and the model is told.
func (s *Session) click(ctx context.Context, r *running, index *int, loadBy time.Time) outcome {
	t, o := s.tabFor(r)
	if o != nil {
		return *o
	}
	i, o := elementIndex(index)
	if o != nil {
		return *o
	}
	var pt struct {
		X, Y    float64
		Label   string
		Covered string
		Error   string
	}
	if o := jsFailure(call(ctx, t, &pt, "point", i), pt.Error); o != nil {
		return *o
	}
	w := s.watch(r, t)
	how := ""
	if pt.Covered != "" {
		var res struct{ Error string }
		if o := jsFailure(call(ctx, t, &res, "clickScript", i), res.Error); o != nil {
			w.stop()
			return *o
		}
		how = fmt.Sprintf(" (by script: %s covers it)", clip(pt.Covered, 80))
	} else if _, err := chromedp.MouseClickXY(pt.X, pt.Y)(ctx, t.t); err != nil {
		w.stop()
		return fail("clicking element [%d] failed: %v", i, err)
	}
	return s.afterAction(ctx, r, w, loadBy, fmt.Sprintf("Clicked [%d] %s%s.", i, pt.Label, how))
}

// inputText types into element i, replacing its content, with trusted
// input events (Input.insertText), and presses Enter when asked.
func (s *Session) inputText(ctx context.Context, r *running, a Args, loadBy time.Time) outcome {
	t, o := s.tabFor(r)
	if o != nil {
		return *o
	}
	i, o := elementIndex(a.Index)
	if o != nil {
		return *o
	}
	var f struct {
		Label   string
		Focused bool
		Error   string
	}
	if o := jsFailure(call(ctx, t, &f, "focus", i), f.Error); o != nil {
		return *o
	}
	if a.Text != "" {
		if _, err := cdp.Call(ctx, t.t, input.InsertText, input.InsertTextParams{Text: a.Text}); err != nil {
			return fail("typing into element [%d] failed: %v", i, err)
		}
	}
	var v struct {
		Value string
		Error string
	}
	_ = call(ctx, t, &v, "value", i)
	text := fmt.Sprintf("Typed into [%d] %s; it now holds %q.", i, f.Label, v.Value)
	if !a.Enter {
		s.quiet(ctx, t)
		return done("%s", text)
	}
	w := s.watch(r, t)
	if err := pressEnter(ctx, t); err != nil {
		w.stop()
		return fail("%s Pressing Enter failed: %v", text, err)
	}
	return s.afterAction(ctx, r, w, loadBy, text+" Pressed Enter.")
}

func pressEnter(ctx context.Context, t *tab) error {
	for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeKeyDown, input.DispatchKeyEventTypeKeyUp} {
		p := input.DispatchKeyEventParams{Type: typ, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13}
		if typ == input.DispatchKeyEventTypeKeyDown {
			p.Text = "\r"
		}
		if _, err := cdp.Call(ctx, t.t, input.DispatchKeyEvent, p); err != nil {
			return err
		}
	}
	return nil
}

func (s *Session) selectOption(ctx context.Context, r *running, a Args, loadBy time.Time) outcome {
	t, o := s.tabFor(r)
	if o != nil {
		return *o
	}
	i, o := elementIndex(a.Index)
	if o != nil {
		return *o
	}
	if strings.TrimSpace(a.Text) == "" {
		return fail("select_option needs text: the text of the option to choose")
	}
	w := s.watch(r, t)
	var res struct {
		Label, Chosen, Error string
	}
	if o := jsFailure(call(ctx, t, &res, "select", i, a.Text), res.Error); o != nil {
		w.stop()
		return *o
	}
	return s.afterAction(ctx, r, w, loadBy, fmt.Sprintf("Chose %q in [%d] %s.", res.Chosen, i, res.Label))
}

func (s *Session) scroll(ctx context.Context, r *running, a Args) outcome {
	t, o := s.tabFor(r)
	if o != nil {
		return *o
	}
	amount := 0
	if a.Amount != nil {
		amount = *a.Amount
	}
	down := a.Action == ActionScrollDown
	w, err := s.world(ctx, t)
	if err != nil {
		return fail("scrolling failed: %v", err)
	}
	var res struct{ Moved int }
	if err := eval(ctx, t, w, fmt.Sprintf("__dg.scroll(%d, %t)", amount, down), &res); err != nil {
		return fail("scrolling failed: %v", err)
	}
	s.quiet(ctx, t)
	switch {
	case res.Moved == 0 && down:
		return done("The page is already at its end.")
	case res.Moved == 0:
		return done("The page is already at its top.")
	case res.Moved > 0:
		return done("Scrolled down %d px.", res.Moved)
	}
	return done("Scrolled up %d px.", -res.Moved)
}

func (s *Session) goBack(ctx context.Context, r *running, loadBy time.Time) outcome {
	t, o := s.tabFor(r)
	if o != nil {
		return *o
	}
	h, err := cdp.Call(ctx, t.t, page.GetNavigationHistory, cdp.Empty{})
	if err != nil {
		return fail("going back failed: %v", err)
	}
	if h.CurrentIndex <= 0 {
		return fail("this tab has no earlier page")
	}
	prev := h.Entries[h.CurrentIndex-1]
	if prev.URL == "about:blank" {
		return fail("this tab has no earlier page")
	}
	w := s.watch(r, t)
	if _, err := cdp.Call(ctx, t.t, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: prev.ID}); err != nil {
		w.stop()
		return fail("going back failed: %v", err)
	}
	return s.afterAction(ctx, r, w, loadBy, "Went back.")
}

func (s *Session) switchTab(ctx context.Context, r *running, id *int) outcome {
	if id == nil {
		return fail("switch_tab needs tab_id: the number of a tab in the page state")
	}
	t := r.find(*id)
	if t == nil {
		return fail("there is no tab %d; the tabs are listed in the page state", *id)
	}
	r.setCurrent(t)
	_, _ = cdp.Call(ctx, t.t, page.BringToFront, cdp.Empty{})
	return outcome{text: fmt.Sprintf("Switched to tab %d.", t.id), loads: true}
}

func (s *Session) closeTab(r *running, id *int) outcome {
	t := r.current()
	if id != nil {
		t = r.find(*id)
	}
	if t == nil {
		if id != nil {
			return fail("there is no tab %d", *id)
		}
		return fail("no tab is open")
	}
	r.closeTab(t)
	o := done("Closed tab %d.", t.id)
	if c := r.current(); c != nil {
		o.text += fmt.Sprintf(" Tab %d is current.", c.id)
		o.loads = true
	} else {
		o.text += " No tab is open now."
	}
	return o
}

func (s *Session) screenshot(ctx context.Context, r *running) outcome {
	t, o := s.tabFor(r)
	if o != nil {
		return *o
	}
	shot, err := cdp.Call(ctx, t.t, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng})
	if err != nil {
		return fail("the screenshot failed: %v", err)
	}
	return outcome{text: fmt.Sprintf("A screenshot of the viewport of tab %d is attached.", t.id),
		images: []schemas.Image{{MIMEType: "image/png", Data: shot.Data}}}
}

// waitFor waits, watching the DOM, until the page shows a text or has an
// element matching a selector; bounded by seconds and the action's time.
func (s *Session) waitFor(ctx context.Context, r *running, a Args) outcome {
	t, o := s.tabFor(r)
	if o != nil {
		return *o
	}
	if strings.TrimSpace(a.Text) == "" && strings.TrimSpace(a.Selector) == "" {
		return fail("wait_for needs text or selector")
	}
	limit := s.opts.ActionTimeout * 3 / 4
	if a.Seconds != nil && *a.Seconds > 0 {
		limit = min(limit, time.Duration(*a.Seconds*float64(time.Second)))
	}
	w, err := s.world(ctx, t)
	if err != nil {
		return fail("waiting failed: %v", err)
	}
	var res struct {
		Found bool
		Error string
	}
	if err := eval(ctx, t, w, fmt.Sprintf("__dg.waitFor(%s, %s, %d)", jsString(a.Text), jsString(a.Selector), limit.Milliseconds()), &res); err != nil {
		return *jsFailure(err, "")
	}
	what := fmt.Sprintf("the text %q", clip(a.Text, 100))
	if a.Selector != "" {
		what = fmt.Sprintf("an element matching %q", clip(a.Selector, 100))
	}
	switch {
	case res.Error != "":
		return fail("%s", res.Error)
	case !res.Found:
		return fail("the page did not show %s within %s", what, limit.Round(100*time.Millisecond))
	}
	s.quiet(ctx, t)
	return done("The page shows %s.", what)
}

// guardReason says why the guard refused a URL, as the proxy does.
func guardReason(err error) string {
	var be *netguard.BlockedError
	if errors.As(err, &be) {
		return "refused: " + describeBlocked(be)
	}
	return strings.TrimPrefix(err.Error(), "netguard: ")
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
