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
