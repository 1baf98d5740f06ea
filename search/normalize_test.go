package search

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestNormalizeURL(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"https://Example.COM/Path", "https://example.com/Path"},
		{"HTTPS://example.com", "https://example.com/"},
		{"https://example.com/", "https://example.com/"},
		{"https://example.com:443/a", "https://example.com/a"},
		{"http://example.com:80/a", "http://example.com/a"},
		{"http://example.com:443/a", "http://example.com:443/a"},
		{"https://example.com:8443/a", "https://example.com:8443/a"},
		{"https://example.com/docs/", "https://example.com/docs"},
		{"https://example.com/docs//", "https://example.com/docs"},
		{"https://example.com/a#section-2", "https://example.com/a"},
		{"https://example.com./a", "https://example.com/a"},
		{"https://example.com/a?utm_source=x&utm_medium=y&id=3", "https://example.com/a?id=3"},
		{"https://example.com/a?UTM_Campaign=x", "https://example.com/a"},
		{"https://example.com/a?b=2&a=1", "https://example.com/a?a=1&b=2"},
		{"https://example.com/a?fbclid=abc&gclid=def&srsltid=ghi", "https://example.com/a"},
		{"https://example.com/a?", "https://example.com/a"},
		{"https://example.com/a?q=go+lang&x=%20&y=a%2Fb", "https://example.com/a?q=go+lang&x=+&y=a%2Fb"},
		{"https://example.com/a?flag&b=", "https://example.com/a?b=&flag"},
		{"https://example.com/a?b=2&b=1", "https://example.com/a?b=2&b=1"},
		{"https://example.com/%7Euser", "https://example.com/~user"},
		{"https://[2001:DB8::1]:443/x", "https://[2001:db8::1]/x"},
		{"  https://example.com/a  ", "https://example.com/a"},
		{"not a url", "not a url"},
		{"/relative/path", "/relative/path"},
		{"mailto:someone@example.com", "mailto:someone@example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			assert.Equal(t, tt.want, NormalizeURL(tt.in))
		})
	}
}

func TestDedup(t *testing.T) {
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	in := []Result{
		{Title: "A", URL: "https://example.com/a/", Snippet: "first", Score: 0.5},
		{Title: "B", URL: "https://other.example/b"},
		{Title: "A again", URL: "https://EXAMPLE.com/a?utm_source=news#top", Content: "full text", Score: 0.9, Published: day},
		{Title: "no url 1"},
		{Title: "no url 2"},
		{Title: "", URL: "https://other.example/b/", Snippet: "b snippet"},
	}
	orig := append([]Result(nil), in...)
	got := Dedup(in)
	assert.Equal(t, orig, in, "the input is not modified")
	assert.Equal(t, []Result{
		{Title: "A", URL: "https://example.com/a/", Snippet: "first", Content: "full text", Score: 0.9, Published: day},
		{Title: "B", URL: "https://other.example/b", Snippet: "b snippet"},
		{Title: "no url 1"},
		{Title: "no url 2"},
	}, got)
}

func TestFinish(t *testing.T) {
	in := []Result{
		{Title: " A ", URL: " https://example.com/a ", Snippet: " s "},
		{Title: "magnet", URL: "magnet:?xt=urn:btih:abc"},
		{Title: "ftp", URL: "ftp://example.com/file"},
		{Title: "relative", URL: "/local"},
		{Title: "", URL: "https://example.com/untitled"},
		{Title: "dup", URL: "https://example.com/a#x"},
		{Title: "C", URL: "https://example.com/c"},
	}
	got := finish(in, "fake", 2)
	assert.Equal(t, []Result{
		{Title: "A", URL: "https://example.com/a", Snippet: "s", Provider: "fake"},
		{Title: "https://example.com/untitled", URL: "https://example.com/untitled", Provider: "fake"},
	}, got)
	assert.Empty(t, finish(nil, "fake", 5))
}

func FuzzNormalizeURL(f *testing.F) {
	for _, s := range []string{"https://Example.com:443/a/?utm_x=1&b=2#f", "http://[::1]:80/", "x", "https://a.b/%zz", "HTTP://A.B./?&&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := NormalizeURL(s)
		if twice := NormalizeURL(once); twice != once {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, once, twice)
		}
	})
}

func TestPageKey(t *testing.T) {
	same := []string{
		"https://example.com/page",
		"https://example.com/page/",
		"http://example.com/page",
		"HTTP://Example.COM:80/page#top",
		"https://example.com:443/page?utm_source=x&fbclid=y",
		"https://example.com/page?gclid=1#frag",
	}
	for _, u := range same {
		assert.Equal(t, "https://example.com/page", PageKey(u), u)
	}
	// Not the same page: another path, a real query, another port.
	for _, u := range []string{"https://example.com/page2", "https://example.com/page?id=2", "http://example.com:8080/page", "http://example.com:443/page"} {
		assert.NotEqual(t, "https://example.com/page", PageKey(u), u)
	}
	// Other schemes keep their fragment: it names a passage.
	assert.Equal(t, "file:///docs/a.md#L10", PageKey(" file:///docs/a.md#L10 "))
	assert.NotEqual(t, PageKey("file:///docs/a.md#L10"), PageKey("file:///docs/a.md#L20"))
}
