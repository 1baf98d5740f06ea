package browser

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
)

// pageJS is installed in an isolated world of a tab for each snapshot.
//
//go:embed page.js
var pageJS string

// worldName names the isolated world of page.js.
const worldName = "deepgraph"

// errStale: the page an element number refers to is gone.
var errStale = errors.New("the page changed since its state was read (it loaded a new page): read its new state and pick the element again")

// snapshot is what page.js reports of a page.
type snapshot struct {
	URL               string    `json:"url"`
	Title             string    `json:"title"`
	ScrollY           int       `json:"scroll_y"`
	ViewportH         int       `json:"viewport_h"`
	ViewportW         int       `json:"viewport_w"`
	PageH             int       `json:"page_h"`
	Total             int       `json:"total"`
	CrossOriginFrames int       `json:"cross_origin_frames"`
	Elements          []element `json:"elements"`
	Text              struct {
		Above string `json:"above"`
		View  string `json:"view"`
		Below string `json:"below"`
	} `json:"text"`
}

// element is one numbered interactive element.
type element struct {
	I           int      `json:"i"`
	Tag         string   `json:"tag"`
	Role        string   `json:"role"`
	Name        string   `json:"name"`
	InView      bool     `json:"in_view"`
	Y           int      `json:"y"`
	Locator     string   `json:"locator"`
	Type        string   `json:"type"`
	Disabled    bool     `json:"disabled"`
	Href        string   `json:"href"`
	Checked     *bool    `json:"checked"`
	Value       *string  `json:"value"`
	Options     []string `json:"options"`
	MoreOptions int      `json:"more_options"`
}

// world makes a new isolated world in t's main frame and installs page.js
// in it.
func (s *Session) world(ctx context.Context, t *tab) (runtime.ExecutionContextID, error) {
	tree, err := cdp.Call(ctx, t.t, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return 0, err
	}
	w, err := cdp.Call(ctx, t.t, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: tree.FrameTree.Frame.ID, WorldName: worldName})
	if err != nil {
		return 0, err
	}
	if err := eval(ctx, t, w.ExecutionContextID, pageJS, nil); err != nil {
		return 0, fmt.Errorf("installing the page script: %w", err)
	}
	return w.ExecutionContextID, nil
}

// eval evaluates expr in world, awaiting a promise, and decodes its value
// into out (when not nil).
func eval(ctx context.Context, t *tab, world runtime.ExecutionContextID, expr string, out any) error {
	res, err := cdp.Call(ctx, t.t, runtime.Evaluate, runtime.EvaluateParams{
		Expression: expr, ContextID: world, ReturnByValue: new(true), AwaitPromise: new(true), Silent: new(true)})
	if err != nil {
		if strings.Contains(err.Error(), "Cannot find context") || strings.Contains(err.Error(), "context was destroyed") {
			return errStale
		}
		return err
	}
	if d := res.ExceptionDetails; d != nil {
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg = d.Exception.Description
		}
		if strings.Contains(msg, "Execution context was destroyed") {
			return errStale
		}
		return fmt.Errorf("the page script failed: %s", clip(msg, 300))
	}
	if out == nil || res.Result == nil || len(res.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal([]byte(res.Result.Value), out)
}

// call runs __dg.fn(args…) in the world of t's last snapshot.
func call(ctx context.Context, t *tab, out any, fn string, args ...any) error {
	t.mu.Lock()
	w := t.world
	t.mu.Unlock()
	if w == 0 {
		return errStale
	}
	parts := make([]string, len(args))
	for i, a := range args {
		b, err := json.Marshal(a)
		if err != nil {
			return err
		}
		parts[i] = string(b)
	}
	return eval(ctx, t, w, "__dg."+fn+"("+strings.Join(parts, ",")+")", out)
}

// snap takes a snapshot of t: a new world, the elements numbered afresh.
func (s *Session) snap(ctx context.Context, t *tab) (*snapshot, error) {
	w, err := s.world(ctx, t)
	if err != nil {
		return nil, err
	}
	var sn snapshot
	if err := eval(ctx, t, w, fmt.Sprintf("__dg.snapshot(%d, %d)", s.opts.MaxElements, s.opts.MaxStateChars*2/5), &sn); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.world = w
	t.mu.Unlock()
	return &sn, nil
}

// quiet waits, bounded, until t's DOM stops changing, and a little at
// least: what a script renders just after an action shows in the state
// that follows. (A page that renders later is waited for with wait_for.)
func (s *Session) quiet(ctx context.Context, t *tab) {
	w, err := s.world(ctx, t)
	if err != nil {
		return
	}
	_ = eval(ctx, t, w, "__dg.quiet(150, 500, 2000)", nil)
}

// watch follows what an action sets off in a tab: its main frame starting
// to load a page, and that frame stopping (its page loaded, or the
// navigation ended otherwise: a download, an error, a stop).
type watch struct {
	t                *tab
	started, loaded  <-chan jsonv2.Value
	unstart, unload  func()
	startedMain      bool
	popup            *tab
	timedOut, failed bool
}

func (s *Session) watch(r *running, t *tab) *watch {
	// What pages opened before the action is not its doing.
	for drained := false; !drained; {
		select {
		case <-r.opening:
		case <-r.popups:
		default:
			drained = true
		}
	}
	w := &watch{t: t}
	w.started, w.unstart = t.t.Subscribe(page.FrameStartedLoading.Method)
	w.loaded, w.unload = t.t.Subscribe(page.FrameStoppedLoading.Method)
	return w
}

func (w *watch) stop() {
	w.unstart()
	w.unload()
}

// settleWindow is how long, after an action, a navigation or a new tab has
// to begin to count as its effect.
const settleWindow = 400 * time.Millisecond

// settle waits for the effects of an action: a navigation of the tab (then
// its load, until loadBy), or a tab the page opened (which becomes
// current once adopted, then its load). A load that does not end by
// loadBy is stopped.
func (s *Session) settle(ctx context.Context, r *running, w *watch, loadBy time.Time) {
	defer w.stop()
	timer := time.NewTimer(settleWindow)
	defer timer.Stop()
	opening := false
wait:
	for {
		select {
		case v, ok := <-w.started:
			if !ok { // the tab is gone
				break wait
			}
			var ev page.EventFrameStartedLoading
			if jsonv2.Unmarshal(v, &ev) == nil && ev.FrameID == w.t.frameID() {
				w.startedMain = true
				break wait
			}
		case <-r.opening:
			opening = true
			break wait
		case <-timer.C:
			break wait
		case <-ctx.Done():
			return
		}
	}
	if opening {
		// The new tab is being attached (or closed, past MaxTabs).
		adopted := time.NewTimer(time.Until(loadBy))
		defer adopted.Stop()
		select {
		case w.popup = <-r.popups: // nil: refused, and noted
		case <-adopted.C:
		case <-ctx.Done():
			return
		}
	}
	if w.startedMain {
		w.timedOut = !s.waitLoad(ctx, w.t, w.loaded, loadBy)
	}
	if w.popup != nil {
		r.setCurrent(w.popup)
		s.waitReady(ctx, w.popup, loadBy)
	}
}

// waitLoad waits until t's main frame stops loading, until loadBy, and
// stops the loading when it does not; it reports whether it stopped by
// itself.
func (s *Session) waitLoad(ctx context.Context, t *tab, stopped <-chan jsonv2.Value, loadBy time.Time) bool {
	timer := time.NewTimer(time.Until(loadBy))
	defer timer.Stop()
	for {
		select {
		case v, ok := <-stopped:
			if !ok { // the tab is gone
				return false
			}
			var ev page.EventFrameStoppedLoading
			if jsonv2.Unmarshal(v, &ev) == nil && ev.FrameID == t.frameID() {
				return true
			}
			continue
		case <-timer.C:
		case <-ctx.Done():
		}
		s.stopLoading(t)
		return false
	}
}

// stopLoading stops whatever t is loading, even after the action's
// context ended.
func (s *Session) stopLoading(t *tab) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = cdp.Call(ctx, t.t, page.StopLoading, cdp.Empty{})
}

// waitReady waits until a tab that was opened without us (a popup) has
// loaded, until loadBy.
func (s *Session) waitReady(ctx context.Context, t *tab, loadBy time.Time) {
	rctx, cancel := context.WithDeadline(ctx, loadBy)
	defer cancel()
	w, err := s.world(rctx, t)
	if err == nil {
		err = eval(rctx, t, w, `document.readyState === 'complete' || new Promise((ok) => addEventListener('load', () => ok(true), {once: true}))`, nil)
	}
	if err != nil && rctx.Err() != nil {
		s.stopLoading(t)
	}
}
