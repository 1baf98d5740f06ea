package browser

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrivateAddressesRefused: a redirect to a private address, and every
// other way a page can reach one — an iframe, an image, fetch, a form, a
// script's window.open, a WebSocket, a name that resolves to it — passes
// the SSRF guard and is refused; the model is told, and the private
// server never sees a request.
func TestPrivateAddressesRefused(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	secret := func(host string) string { return "http://" + host + ":" + web.port + "/secret" }
	web.mux.HandleFunc("/secret", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "the metadata of the cloud") })
	web.mux.HandleFunc("/go", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, secret("127.0.0.1"), http.StatusFound)
	})
	web.page("/tricks", `<!doctype html><title>Tricks</title><p>Nothing to see.</p>
<button onclick="window.open('`+secret("127.0.0.1")+`?open')">Open a window</button>
<iframe src="`+secret("internal.test")+`"></iframe>
<img src="`+secret("127.0.0.1")+`?img">
<script>
fetch('`+secret("127.0.0.1")+`?fetch').catch(() => {});
fetch('`+secret("localhost")+`?localhost').catch(() => {});
try { new WebSocket('ws://127.0.0.1:`+web.port+`/secret'); } catch (e) {}
</script>`)
	s := newSession(t, Options{})

	res := do(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/go")})
	assert.Contains(t, res.Content(), "Refused by the network guard: "+secret("127.0.0.1")+" — 127.0.0.1 is a loopback address")
	assert.Empty(t, res.Sources, "a refused page is no source")
	state := s.State(context.Background())
	assert.Contains(t, state, "refused")

	res = do(t, s, map[string]any{"action": "go_to_url", "url": secret("127.0.0.1")})
	assert.True(t, res.Failed())
	assert.Contains(t, res.Error, "cannot open "+secret("127.0.0.1")+": refused: 127.0.0.1 is a loopback address")
	res = do(t, s, map[string]any{"action": "go_to_url", "url": secret("internal.test")})
	assert.Contains(t, res.Error, "internal.test (127.0.0.1) is a loopback address")
	res = do(t, s, map[string]any{"action": "go_to_url", "url": "file:///etc/passwd"})
	assert.Contains(t, res.Error, "only http and https pages can be opened")

	res = do(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/tricks")})
	assert.False(t, res.Failed(), res.Error)
	mustDo(t, s, map[string]any{"action": "wait_for", "text": "Nothing to see"})
	// The page's requests are refused as they are made; the next action
	// reports those not reported yet.
	all := res.Content() + "\n" + do(t, s, map[string]any{"action": "scroll_down"}).Content()
	assert.Contains(t, all, "Refused by the network guard: "+secret("internal.test"))
	assert.Contains(t, all, "Refused by the network guard: "+secret("127.0.0.1")+"?img")
	// A window a click opens is a new tab, and its page is refused too.
	state = s.State(context.Background())
	res = do(t, s, map[string]any{"action": "click", "index": indexOf(t, state, `button "Open a window"`)})
	assert.Contains(t, res.Content(), "It opened a new tab (2)")
	assert.Contains(t, res.Content(), "Refused by the network guard: "+secret("127.0.0.1")+"?open")
	assert.Zero(t, web.hitCount("/secret"), "the private server was reached")
}

// TestDownloadRefused: a link to a file served as an attachment, and a
// navigation to one, download nothing; the model is told.
func TestDownloadRefused(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	web.page("/", `<!doctype html><title>Files</title><a href="/report.bin">Get the report</a>`)
	web.mux.HandleFunc("/report.bin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="report.bin"`)
		_, _ = w.Write([]byte(strings.Repeat("x", 4096)))
	})
	s := newSession(t, Options{})
	mustDo(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/")})
	state := s.State(context.Background())
	res := do(t, s, map[string]any{"action": "click", "index": indexOf(t, state, `link "Get the report"`)})
	assert.Contains(t, res.Content(), `a download of "report.bin"`)
	assert.Contains(t, res.Content(), "was refused: downloads are off")
	res = do(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/report.bin")})
	assert.True(t, res.Failed())
	assert.Contains(t, res.Content(), "downloads are refused")
	// Nothing was written, neither in the session's directory nor in a
	// Downloads folder of the home it was given.
	assert.Empty(t, filesNamed(t, s.run.dir, "report.bin"))
}

func filesNamed(t *testing.T, dir, name string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), name) {
			found = append(found, p)
		}
		return nil
	})
	require.NoError(t, err)
	return found
}

// TestUploadsAndPermissionsRefused: a file field takes no file, a page
// asking for a file gets none, and location, notifications, camera and
// microphone are denied.
func TestUploadsAndPermissionsRefused(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	web.page("/", `<!doctype html><title>Asks</title>
<input type="file" id="file" aria-label="Your CV">
<button onclick="document.getElementById('file').click()">Choose a file</button>
<ul id="out"></ul>
<script>
const say = (k, v) => { const li = document.createElement('li'); li.textContent = k + ': ' + v; document.getElementById('out').append(li); };
navigator.geolocation.getCurrentPosition(() => say('geolocation', 'granted'), (e) => say('geolocation', 'denied ' + e.code));
say('notification api', typeof Notification === 'undefined' ? 'absent' : Notification.permission);
navigator.mediaDevices.getUserMedia({video: true, audio: true}).then(() => say('camera', 'granted'), (e) => say('camera', 'failed ' + e.name));
for (const name of ['geolocation', 'notifications', 'camera', 'microphone']) {
  navigator.permissions.query({name}).then((p) => say(name + ' permission', p.state), (e) => say(name + ' permission', 'unknown'));
}
</script>`)
	s := newSession(t, Options{})
	// The permission APIs exist only on secure pages: this one counts as
	// one, as an https page would.
	s.extraFlags = map[string]string{"unsafely-treat-insecure-origin-as-secure": web.url("shop.test", "")}
	mustDo(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/")})
	for _, want := range []string{"geolocation: denied 1", "notification api: absent", "camera: failed",
		"geolocation permission: denied", "notifications permission: denied", "camera permission: denied", "microphone permission: denied"} {
		mustDo(t, s, map[string]any{"action": "wait_for", "text": want, "seconds": 10})
	}
	state := s.State(context.Background())
	assert.NotContains(t, state, "granted")

	res := do(t, s, map[string]any{"action": "input_text", "index": indexOf(t, state, `file "Your CV"`), "text": "/etc/passwd"})
	assert.Contains(t, res.Error, "is a file upload: uploading files is refused")
	res = do(t, s, map[string]any{"action": "click", "index": indexOf(t, state, `button "Choose a file"`)})
	assert.Contains(t, res.Content(), "the page asked for a file to upload; refused")
}

// TestNeverFinishesLoading: a page whose body never ends is stopped when
// its load time is up; the model is told and sees what had loaded, and the
// browser goes on.
func TestNeverFinishesLoading(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	web.mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Slow</title><p>The first part.</p>`+strings.Repeat(" ", 2048))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // never more
	})
	web.page("/fast", `<!doctype html><title>Fast</title><p>Done.</p>`)
	s := newSession(t, Options{ActionTimeout: 4 * time.Second})
	res := mustDo(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/slow")})
	assert.Contains(t, res.Output, "The page did not finish loading within 3s and was stopped; what had loaded is shown.")
	assert.Empty(t, res.Sources, "a page that did not load is no source")
	assert.Contains(t, s.State(context.Background()), "The first part.")
	res = mustDo(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/fast")})
	assert.Contains(t, res.Output, `Now on tab 1: "Fast"`)
}

// TestManyElements: a page with 2,000 interactive elements gives a state
// within its size bound that says how many there are, lists those in view,
// and numbers them all for the actions.
func TestManyElements(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	var b strings.Builder
	b.WriteString(`<!doctype html><title>Two thousand</title><h1>Buttons</h1><p id="out">none</p>`)
	for i := range 2000 {
		fmt.Fprintf(&b, `<button onclick="document.getElementById('out').textContent='pressed %d'">Button number %d with a fairly long label to fill the state</button><br>`, i, i)
	}
	web.page("/", b.String())
	s := newSession(t, Options{})
	mustDo(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/")})
	state := s.State(context.Background())
	assert.LessOrEqual(t, len([]rune(state)), DefaultMaxStateChars)
	assert.Contains(t, state, "Interactive elements: 2000 on the page")
	assert.Contains(t, state, `*[0] button "Button number 0`)
	assert.Contains(t, state, "more elements not listed")
	lines := 0
	for _, l := range strings.Split(state, "\n") {
		if elementNumber.MatchString(l) {
			lines++
		}
	}
	assert.LessOrEqual(t, lines, DefaultMaxElements)
	assert.Positive(t, lines)
	t.Logf("state: %d characters, %d elements listed", len([]rune(state)), lines)
	// An element far down the page is clicked by its number, scrolled to.
	mustDo(t, s, map[string]any{"action": "click", "index": 1999})
	mustDo(t, s, map[string]any{"action": "wait_for", "text": "pressed 1999"})
	state = s.State(context.Background())
	assert.Contains(t, state, `*[1999] button "Button number 1999`)
}

// TestPageLimit: past MaxPages, actions that load a page are refused and
// those that read one still work.
func TestPageLimit(t *testing.T) {
	t.Parallel()
	web := newSite(t)
	web.page("/", `<!doctype html><title>Hi</title><p>Hello.</p><a href="/next">Next</a>`)
	web.page("/next", `<!doctype html><title>Next</title><p>Next page.</p>`)
	s := newSession(t, Options{MaxPages: 2})
	mustDo(t, s, map[string]any{"action": "go_to_url", "url": web.url("shop.test", "/")})
	state := s.State(context.Background())
	mustDo(t, s, map[string]any{"action": "click", "index": indexOf(t, state, `link "Next"`)})
	res := do(t, s, map[string]any{"action": "go_back"})
	assert.Contains(t, res.Error, "refused: this run has loaded 2 pages, the most allowed")
	mustDo(t, s, map[string]any{"action": "extract_content", "goal": "the next page"})
}
