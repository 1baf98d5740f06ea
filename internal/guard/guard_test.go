package guard

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAuthorized(t *testing.T) {
	for _, c := range []struct {
		name, header, value string
		want                bool
	}{
		{"bearer", "Authorization", "Bearer s3cret", true},
		{"x-api-key", "X-Api-Key", "s3cret", true},
		{"wrong bearer", "Authorization", "Bearer nope", false},
		{"no scheme", "Authorization", "s3cret", false},
		{"basic", "Authorization", "Basic s3cret", false},
		{"empty key", "X-Api-Key", " ", false},
		{"none", "", "", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if c.header != "" {
			r.Header.Set(c.header, c.value)
		}
		assert.Equal(t, c.want, Authorized(r, "s3cret"), c.name)
	}
}

// Each refusal goes through Refuse with its status, and closes the
// connection; what passes reaches the handler.
func TestWrap(t *testing.T) {
	var refused []int
	h := Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(299) }), Options{
		Token: "t", Loopback: true, CORSOrigins: []string{"https://UI.example/"},
		Open: func(r *http.Request) bool { return r.URL.Path == "/ok" },
		Refuse: func(w http.ResponseWriter, status int, _ string) {
			refused = append(refused, status)
			w.WriteHeader(status)
		},
	})
	serve := func(host, path string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "http://"+host+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	assert.Equal(t, 421, serve("evil.example:8080", "/x", "X-Api-Key", "t").Code, "DNS rebinding")
	assert.Equal(t, 403, serve("127.0.0.1:8080", "/x", "X-Api-Key", "t", "Origin", "https://other.example").Code)
	assert.Equal(t, 401, serve("localhost:8080", "/x").Code)
	assert.Equal(t, "close", serve("localhost:8080", "/x").Header().Get("Connection"))
	assert.Equal(t, 299, serve("localhost:8080", "/ok").Code, "Open lets it through")
	ok := serve("[::1]:8080", "/x", "X-Api-Key", "t", "Origin", "https://ui.example")
	assert.Equal(t, 299, ok.Code)
	assert.Equal(t, "https://ui.example", ok.Header().Get("Access-Control-Allow-Origin"))
	assert.Equal(t, 299, serve("127.0.0.1:8080", "/x", "Authorization", "Bearer t", "Origin", "http://127.0.0.1:8080").Code, "same origin")
	assert.Equal(t, []int{421, 403, 401, 401}, refused)
}
