package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/search/netguard"
	"github.com/deepgraph/deepgraph/tools"
)

// The browser tests drive a real headless Chromium against pages served by
// the test. Chromium: $DEEPGRAPH_CHROMIUM, or what FindChromium finds;
// without one the tests skip, saying how to install it. Each test drives a
// browser of its own, so they run in parallel — except those that count
// the process's goroutines or a browser's processes (tagged_linux_test.go).

// chromiumOrSkip returns the Chromium to test with, or skips.
func chromiumOrSkip(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test: skipped in -short mode")
	}
	path, err := FindChromium(os.Getenv("DEEPGRAPH_CHROMIUM"))
	if err != nil {
		t.Skipf("browser test: %v", err)
	}
	return path
}

// site is the test's web: one httptest server answering for every host
// name, reached under names that resolve to it. Names in allowed are
// admitted by the guard; others (and the loopback address itself) are
// refused like any private address.
type site struct {
	srv  *httptest.Server
	port string
	mux  *http.ServeMux

	mu   sync.Mutex
	hits map[string]int // path → requests
	form map[string][]string
}

func newSite(t *testing.T) *site {
	t.Helper()
	s := &site{mux: http.NewServeMux(), hits: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		s.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	_, s.port, _ = net.SplitHostPort(s.srv.Listener.Addr().String())
	return s
}

// url is the address of path on host (a name the resolver knows).
func (s *site) url(host, path string) string {
	return "http://" + host + ":" + s.port + path
}

func (s *site) page(path, html string) {
	s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, html)
	})
}

func (s *site) hitCount(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// resolver answers for the test's names: each resolves to the loopback
// address of the test server.
type resolver map[string]string

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := r[host]
	if !ok {
		return nil, fmt.Errorf("no such host %q", host)
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

// testGuard admits shop.test and docs.test (both the test server); it
// refuses internal.test, which resolves to the same loopback address, and
// the loopback address itself.
func testGuard() netguard.Config {
	return netguard.Config{
		Resolver: resolver{"shop.test": "127.0.0.1", "docs.test": "127.0.0.1", "internal.test": "127.0.0.1"},
		Allow:    []string{"shop.test", "docs.test"},
	}
}

// newSession starts a session on the test's web; it is closed with the
// test.
func newSession(t *testing.T, opts Options) *Session {
	t.Helper()
	opts.Chromium = chromiumOrSkip(t)
	reader, err := search.NewReader(search.ReaderConfig{})
	require.NoError(t, err)
	opts.Reader = reader
	if opts.Guard.Resolver == nil {
		opts.Guard = testGuard()
	}
	if opts.ActionTimeout == 0 {
		opts.ActionTimeout = 20 * time.Second
	}
	s, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// do runs one action as a model would, with JSON arguments.
func do(t *testing.T, s *Session, args map[string]any) tools.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	res, err := s.Run(context.Background(), raw)
	require.NoError(t, err, "action %v", args)
	t.Logf("%v →\n%s", args, res.Content())
	return res
}

// mustDo is do for an action that must succeed.
func mustDo(t *testing.T, s *Session, args map[string]any) tools.Result {
	t.Helper()
	res := do(t, s, args)
	require.False(t, res.Failed(), "action %v failed: %s", args, res.Error)
	return res
}

// indexOf finds the number of the element whose line in state contains
// what (such as `button "Send"`).
func indexOf(t *testing.T, state, what string) int {
	t.Helper()
	for _, line := range strings.Split(state, "\n") {
		if !strings.Contains(line, what) {
			continue
		}
		if m := elementNumber.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	require.Failf(t, "no such element", "no element line with %q in the state:\n%s", what, state)
	return -1
}

var elementNumber = regexp.MustCompile(`^[ *]\[(\d+)\]`)

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}
