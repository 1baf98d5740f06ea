package search

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// recorded is one request a fake API received.
type recorded struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   string
}

// fakeAPI is an httptest server that records requests and answers them
// with a scripted sequence of responses (the last one repeats).
type fakeAPI struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []recorded
	answers []answer
}

type answer struct {
	status int
	header map[string]string
	body   string
	delay  time.Duration
}

func newFakeAPI(t *testing.T, answers ...answer) *fakeAPI {
	t.Helper()
	f := &fakeAPI{answers: answers}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := len(f.reqs)
		f.reqs = append(f.reqs, recorded{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: string(body)})
		a := f.answers[min(n, len(f.answers)-1)]
		f.mu.Unlock()
		if a.delay > 0 {
			select {
			case <-time.After(a.delay):
			case <-r.Context().Done():
				return
			}
		}
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		status := a.status
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// fastRetries keeps retry waits in tests to a millisecond.
func fastRetries(f *fakeAPI) HTTPOptions {
	return HTTPOptions{HTTPClient: f.Client(), RetryBackoff: time.Millisecond}
}

func basicAuth(h string) (user, pass string, ok bool) {
	r := &http.Request{Header: http.Header{"Authorization": {h}}}
	return r.BasicAuth()
}
