package browser

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const formPage = `<!doctype html><html><head><title>Order form</title></head><body>
<h1>Order a T-shirt</h1>
<form method="post" action="/order">
  <label for="name">Your name</label> <input id="name" name="name" placeholder="Ada Lovelace">
  <label>Size <select name="size"><option>S</option><option selected>M</option><option>L</option></select></label>
  <label><input type="checkbox" name="gift" value="yes"> Gift wrap</label>
  <button type="submit">Place order</button>
</form>
</body></html>`

// TestForm: a form filled and submitted by element number — text typed,
// an option chosen, a box ticked, the button clicked — and the server gets
// what a user's browser would send.
func TestForm(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	web.page("/form", formPage)
	got := make(chan http.Header, 1)
	web.mux.HandleFunc("/order", func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		got <- http.Header(r.PostForm)
		fmt.Fprintf(w, "<!doctype html><title>Thanks</title><p>Thank you, %s: one %s shirt, gift %s.</p>",
			r.PostForm.Get("name"), r.PostForm.Get("size"), r.PostForm.Get("gift"))
	})
	s := newSession(t, Options{})
	assert.Empty(t, s.State(context.Background()), "no state before the browser starts")

	res := mustDo(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/form")})
	assert.Contains(t, res.Output, `Now on tab 1: "Order form"`)
	require.Len(t, res.Sources, 1, "the page loaded is a source")
	assert.Equal(t, web.url("shop.test", "/form"), res.Sources[0].URL)

	state := s.State(context.Background())
	t.Logf("state:\n%s", state)
	assert.Contains(t, state, `Tab 1 (current): "Order form"`)
	name := indexOf(t, state, `textbox "Your name"`)
	size := indexOf(t, state, `combobox "Size"`)
	gift := indexOf(t, state, `checkbox "Gift wrap"`)
	send := indexOf(t, state, `button "Place order"`)

	mustDo(t, s, map[string]any{"action": "input_text", "index": name, "text": "Ada"})
	res = mustDo(t, s, map[string]any{"action": "select_option", "index": size, "text": "l"})
	assert.Contains(t, res.Output, `Chose "L"`)
	bad := do(t, s, map[string]any{"action": "select_option", "index": size, "text": "XXL"})
	assert.Contains(t, bad.Error, `has no option "XXL"`)
	assert.Contains(t, bad.Error, `"M"`, "the options are listed")
	mustDo(t, s, map[string]any{"action": "click", "index": gift})
	state = s.State(context.Background())
	assert.Contains(t, state, `value="Ada"`)
	assert.Contains(t, state, "checked")

	res = mustDo(t, s, map[string]any{"action": "click", "index": send})
	assert.Contains(t, res.Output, `Now on tab 1: "Thanks"`)
	form := <-got
	assert.Equal(t, []string{"Ada"}, form["name"])
	assert.Equal(t, []string{"L"}, form["size"])
	assert.Equal(t, []string{"yes"}, form["gift"])
	state = s.State(context.Background())
	assert.Contains(t, state, "Thank you, Ada: one L shirt, gift yes.")
	assert.True(t, strings.HasPrefix(state, "Browser state"), state)
}

// TestListRenderedLate: a list that JavaScript renders after a delay is
// waited for (the DOM is watched, not polled) and then shows in the state;
// a text that never comes ends the wait at its bound, as a failure the
// model reads.
func TestListRenderedLate(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	web.page("/list", `<!doctype html><title>Releases</title><h1>Releases</h1><ul id="list"></ul>
<script>
setTimeout(() => {
  for (const v of ['Go 1.24', 'Go 1.25', 'Go 1.26']) {
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = '/notes/' + v.split(' ')[1];
    a.textContent = v + ' release notes';
    li.append(a);
    document.getElementById('list').append(li);
  }
}, 700);
</script>`)
	s := newSession(t, Options{})
	mustDo(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/list")})
	res := mustDo(t, s, map[string]any{"action": "wait_for", "text": "go 1.26 RELEASE notes", "seconds": 10})
	assert.Contains(t, res.Output, `The page shows the text "go 1.26 RELEASE notes"`)
	state := s.State(context.Background())
	assert.Contains(t, state, `link "Go 1.26 release notes" → /notes/1.26`)
	assert.Contains(t, state, "Text in view: Releases Go 1.24 release notes")

	res = do(t, s, map[string]any{"action": "wait_for", "selector": "#never", "seconds": 0.5})
	assert.True(t, res.Failed())
	assert.Contains(t, res.Error, `the page did not show an element matching "#never" within 500ms`)
	res = do(t, s, map[string]any{"action": "wait_for", "selector": "((", "seconds": 0.5})
	assert.Contains(t, res.Error, "bad selector")
}

// TestLinkOpensNewTab: a link with target=_blank opens a tab that becomes
// current; the tabs can be switched and closed, and a page that opens
// more tabs than allowed has them closed.
func TestLinkOpensNewTab(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	web.page("/", `<!doctype html><title>Home</title><a href="/help" target="_blank">Help in a new tab</a>
`)
	web.page("/popup", `<!doctype html><title>Pop</title><script>window.open('/popped')</script>`)
	web.page("/help", `<!doctype html><title>Help</title><p>How to order.</p>`)
	s := newSession(t, Options{MaxTabs: 2})
	mustDo(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/")})
	state := s.State(context.Background())
	res := mustDo(t, s, map[string]any{"action": "click", "index": indexOf(t, state, `link "Help in a new tab"`)})
	assert.Contains(t, res.Output, "It opened a new tab (2), now the current one.")
	assert.Contains(t, res.Output, `Now on tab 2: "Help"`)
	require.Len(t, res.Sources, 1)
	assert.Equal(t, web.url("shop.test", "/help"), res.Sources[0].URL)
	state = s.State(context.Background())
	assert.Contains(t, state, `Tab 1: "Home"`)
	assert.Contains(t, state, `Tab 2 (current): "Help"`)
	assert.Contains(t, state, "How to order.")

	res = mustDo(t, s, map[string]any{"action": "switch_tab", "tab_id": 1})
	assert.Contains(t, res.Output, `Now on tab 1: "Home"`)
	assert.Contains(t, do(t, s, map[string]any{"action": "switch_tab", "tab_id": 9}).Error, "there is no tab 9")

	// A third tab, with two allowed: closed at once, and said.
	state = s.State(context.Background())
	res = mustDo(t, s, map[string]any{"action": "click", "index": indexOf(t, state, `link "Help in a new tab"`)})
	assert.Contains(t, res.Output, "Note: a page opened a new tab")
	assert.Contains(t, res.Output, "it was closed: 2 tabs are open, the most allowed")
	state = s.State(context.Background())
	assert.Contains(t, state, `Tab 1 (current): "Home"`)
	assert.Equal(t, 2, strings.Count(state, "\nTab "), state)
	// A script's window.open without a click is a popup, and blocked.
	res = mustDo(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/popup")})
	state = s.State(context.Background())
	assert.Equal(t, 2, strings.Count(state, "\nTab "), state)

	res = mustDo(t, s, map[string]any{"action": "close_tab", "tab_id": 2})
	assert.Contains(t, res.Output, "Closed tab 2.")
	state = s.State(context.Background())
	assert.NotContains(t, state, "Tab 2")
	assert.Equal(t, 1, strings.Count(state, "\nTab "), state)
	assert.Zero(t, web.hitCount("/popped"))
}

// TestExtractScrollScreenshotBack: extract_content reads the whole
// rendered page as Markdown through the reader (a source, with its URL),
// a goal brings the matching parts of a long page first, scrolling moves
// the viewport the state describes, a screenshot is an image, and go_back
// returns to the previous page.
func TestExtractScrollScreenshotBack(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	var long strings.Builder
	long.WriteString(`<!doctype html><title>Handbook</title><article><h1>Handbook</h1>`)
	for i := range 300 {
		fmt.Fprintf(&long, "<p>Paragraph %d says nothing in particular about anything at all, at length.</p>", i)
		if i == 250 {
			long.WriteString("<p>Refunds are paid within 14 days of the return.</p>")
		}
	}
	long.WriteString(`<script>document.querySelector('article').insertAdjacentHTML('beforeend', '<p>Rendered by script.</p>')</script></article>`)
	web.page("/handbook", long.String())
	web.page("/", `<!doctype html><title>Start</title><a href="/handbook">Handbook</a>`)
	s := newSession(t, Options{MaxContentChars: 3000})
	mustDo(t, s, map[string]any{"action": "go_to_url", "url": web.url("docs.test", "/")})
	state := s.State(context.Background())
	mustDo(t, s, map[string]any{"action": "click", "index": indexOf(t, state, `link "Handbook"`)})

	res := mustDo(t, s, map[string]any{"action": "extract_content", "goal": "how many days until refunds are paid"})
	assert.Contains(t, res.Output, "Title: Handbook")
	assert.Contains(t, res.Output, "shown are the parts that match the goal")
	assert.Contains(t, res.Output, "Refunds are paid within 14 days of the return.")
	require.Len(t, res.Sources, 1)
	assert.Equal(t, web.url("docs.test", "/handbook"), res.Sources[0].URL)
	assert.Equal(t, "Handbook", res.Sources[0].Title)
	res = mustDo(t, s, map[string]any{"action": "extract_content", "goal": "refunds", "offset": 3000})
	assert.Contains(t, res.Output, "Showing characters 3000 to 6000 of")
	assert.Contains(t, res.Output, "call extract_content with offset 6000 to read on")
	res = mustDo(t, s, map[string]any{"action": "extract_content", "goal": "what was rendered by the script"})
	assert.Contains(t, res.Output, "Rendered by script.", "the rendered DOM is read, not the page's source")
	last := do(t, s, map[string]any{"action": "extract_content", "offset": 1000000})
	assert.Contains(t, last.Error, "is past the end of the page's content")

	before := s.State(context.Background())
	assert.Contains(t, before, "Viewport 1280×")
	assert.Contains(t, before, ": 0 px of the page above it")
	res = mustDo(t, s, map[string]any{"action": "scroll_down", "scroll_amount": 500})
	assert.Equal(t, "Scrolled down 500 px.", res.Output)
	assert.Contains(t, s.State(context.Background()), ": 500 px of the page above it")
	assert.Contains(t, s.State(context.Background()), "Text above the viewport (its end): ")
	res = mustDo(t, s, map[string]any{"action": "scroll_up"})
	assert.Equal(t, "Scrolled up 500 px.", res.Output)
	res = mustDo(t, s, map[string]any{"action": "scroll_up"})
	assert.Equal(t, "The page is already at its top.", res.Output)

	res = mustDo(t, s, map[string]any{"action": "screenshot"})
	require.Len(t, res.Images, 1)
	assert.Equal(t, "image/png", res.Images[0].MIMEType)
	assert.True(t, strings.HasPrefix(string(res.Images[0].Data), "\x89PNG\r\n\x1a\n"), "not a PNG")

	res = mustDo(t, s, map[string]any{"action": "go_back"})
	assert.Contains(t, res.Output, `Now on tab 1: "Start"`)
	assert.Contains(t, do(t, s, map[string]any{"action": "go_back"}).Error, "this tab has no earlier page")
	assert.Contains(t, do(t, s, map[string]any{"action": "click", "index": 0}).Error, "the page changed since its state was read",
		"the numbers of a page that is gone are not used")
	s.State(context.Background())
	assert.Contains(t, do(t, s, map[string]any{"action": "click", "index": 99}).Error, "there is no element [99] on this page")
}
