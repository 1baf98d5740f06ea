package search_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/search"
)

// ReadHTML converts a document at hand as Read converts a fetched one:
// title, main content as Markdown, links made absolute; a document over
// MaxBytes is cut and marked; only http(s) URLs name a page.
func TestReadHTML(t *testing.T) {
	r, err := search.NewReader(search.ReaderConfig{MaxBytes: 4096})
	require.NoError(t, err)
	html := `<!doctype html><html><head><title>Blue Mug</title><script>var x = 1;</script></head><body>
<nav><a href="/">Home</a></nav><article><h1>Blue Mug</h1><p>A stoneware mug. See <a href="/care">care</a>.</p></article></body></html>`
	p, err := r.ReadHTML(context.Background(), "https://shop.example/product/blue-mug", html)
	require.NoError(t, err)
	assert.Equal(t, "Blue Mug", p.Title)
	assert.Equal(t, "https://shop.example/product/blue-mug", p.URL)
	assert.Equal(t, "text/html", p.ContentType)
	assert.Contains(t, p.Content, "A stoneware mug. See [care](https://shop.example/care).")
	assert.NotContains(t, p.Content, "var x")
	assert.False(t, p.Truncated)

	big := "<p>" + strings.Repeat("word ", 2000) + "</p>"
	p, err = r.ReadHTML(context.Background(), "https://shop.example/big", big)
	require.NoError(t, err)
	assert.True(t, p.Truncated, "a document over MaxBytes is cut")

	for _, bad := range []string{"file:///etc/passwd", "about:blank", "not a url", ""} {
		_, err := r.ReadHTML(context.Background(), bad, html)
		assert.ErrorIs(t, err, search.ErrBadRequest, bad)
	}
}
