package wiretest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServer(t *testing.T) {
	s := NewServer(t, func(w http.ResponseWriter, r *http.Request, attempt int) {
		WriteJSON(w, http.StatusAccepted, map[string]any{"attempt": attempt, "path": r.URL.Path})
	})
	for i, body := range []string{`{"a":1}`, `{"b":[true]}`} {
		req, err := http.NewRequest(http.MethodPost, s.URL+"/v1/x", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-Test", "yes")
		resp, err := s.Client().Do(req)
		require.NoError(t, err)
		var got struct {
			Attempt int    `json:"attempt"`
			Path    string `json:"path"`
		}
		require.NoError(t, decode(resp, &got))
		assert.Equal(t, http.StatusAccepted, resp.StatusCode)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		assert.Equal(t, i+1, got.Attempt)
		assert.Equal(t, "/v1/x", got.Path)
	}
	reqs := s.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, Request{Method: http.MethodPost, Path: "/v1/x", Header: reqs[0].Header, Body: map[string]any{"a": float64(1)}, Raw: `{"a":1}`}, reqs[0])
	assert.Equal(t, "yes", reqs[0].Header.Get("X-Test"))
	assert.Equal(t, map[string]any{"b": []any{true}}, reqs[1].Body)

	resp, err := s.Client().Post(s.URL, "text/plain", strings.NewReader("not json"))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Len(t, s.Requests(), 2, "a body that is not JSON is not recorded")
}

func TestJSONAndSchema(t *testing.T) {
	assert.Equal(t, `{"k":[1,2]}`, JSON(t, map[string][]int{"k": {1, 2}}))
	type answer struct {
		Text string `json:"text"`
	}
	s := Schema[answer](t)
	assert.Equal(t, "object", s.Type)
	assert.Contains(t, s.Properties, "text")
}

func TestNoGoroutineRunning(t *testing.T) {
	NoGoroutineRunning(t, "a marker no goroutine's stack contains")

	// A goroutine that ends soon is waited for.
	started, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go parkedForWiretestCheck(started, release, done)
	<-started
	go func() {
		time.Sleep(20 * time.Millisecond)
		close(release)
	}()
	NoGoroutineRunning(t, "parkedForWiretestCheck")
	select {
	case <-done:
	default:
		t.Fatal("returned while the goroutine was still running")
	}
}

//go:noinline
func parkedForWiretestCheck(started chan<- struct{}, release <-chan struct{}, done chan<- struct{}) {
	close(started)
	<-release
	close(done)
}

func decode(resp *http.Response, v any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}
