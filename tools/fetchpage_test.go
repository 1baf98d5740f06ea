package tools

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/search/netguard"
)

type fakeReader struct {
	page *search.Page
	err  error
	url  string
}

func (f *fakeReader) Read(_ context.Context, url string) (*search.Page, error) {
	f.url = url
	if f.err != nil {
		return nil, f.err
	}
	p := *f.page
	return &p, nil
}

func TestFetchPage(t *testing.T) {
	content := "# Heading\n\n" + strings.Repeat("é", 95) // 106 characters
	fr := &fakeReader{page: &search.Page{
		URL: "https://example.com/final", Title: "Ex\tample\n", Content: content,
		Published: time.Date(2023, 1, 2, 0, 0, 0, 0, time.UTC),
	}}
	tool, err := NewFetchPage(FetchPageOptions{Reader: fr, MaxChars: 50})
	require.NoError(t, err)
	c, err := NewCollection(tool)
	require.NoError(t, err)

	res, err := c.Execute(context.Background(), call(FetchPageName, `{"url":" https://example.com/start "}`))
	require.NoError(t, err)
	require.False(t, res.Failed(), res.Error)
	assert.Equal(t, "https://example.com/start", fr.url)
	assert.True(t, strings.HasPrefix(res.Output, "Title: Ex ample\nURL: https://example.com/final\nPublished: 2023-01-02\n\n# Heading\n\n"), res.Output)
	assert.Contains(t, res.Output, "[content cut at character 50 of 106; call fetch_page with offset 50 to read on]")

	res, err = c.Execute(context.Background(), call(FetchPageName, `{"url":"https://example.com/start","offset":100}`))
	require.NoError(t, err)
	require.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, "Showing characters 100 to 106 of 106.\n\néééééé\n")
	assert.NotContains(t, res.Output, "content cut")

	res, _ = c.Execute(context.Background(), call(FetchPageName, `{"url":"https://example.com/start","offset":106}`))
	assert.Contains(t, res.Error, "offset 106 is past the end")
	res, _ = c.Execute(context.Background(), call(FetchPageName, `{"url":"https://example.com/start","offset":-1}`))
	assert.Contains(t, res.Error, `property "offset": minimum`)
	res, _ = c.Execute(context.Background(), call(FetchPageName, `{"url":""}`))
	assert.Contains(t, res.Error, "the url is empty")

	fr.page = &search.Page{URL: "https://example.com/e", Content: "  ", Truncated: true}
	res, _ = c.Execute(context.Background(), call(FetchPageName, `{"url":"https://example.com/e"}`))
	assert.Contains(t, res.Output, "no readable text content")

	fr.page = &search.Page{URL: "https://example.com/big", Content: "body", Truncated: true}
	res, _ = c.Execute(context.Background(), call(FetchPageName, `{"url":"https://example.com/big"}`))
	assert.Contains(t, res.Output, "larger than the reader's size limit")

	fr.err = fmt.Errorf("search: fetching https://example.com/x: %w", &search.StatusError{URL: "https://example.com/x", Status: 404})
	res, err = c.Execute(context.Background(), call(FetchPageName, `{"url":"https://example.com/x"}`))
	require.NoError(t, err, "a page that fails is the model's to handle")
	assert.Contains(t, res.Error, "cannot read https://example.com/x: fetching https://example.com/x")

	_, err = NewFetchPage(FetchPageOptions{})
	assert.ErrorContains(t, err, "Reader is required")
}

func TestFetchPageCancelled(t *testing.T) {
	fr := &fakeReader{err: errors.New("search: reading: context canceled")}
	tool, err := NewFetchPage(FetchPageOptions{Reader: fr})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = tool.Run(ctx, []byte(`{"url":"https://example.com"}`))
	assert.Error(t, err, "cancellation is an error, not a result")
}

// TestFetchPageWithSearchReader runs the tool over the real page reader:
// private addresses are refused by its SSRF guard, allowed ones are read.
func TestFetchPageWithSearchReader(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>Local page</title></head><body><article><h1>Hello</h1>
<p>This paragraph is the main content of the page and it is long enough to be kept by the extractor.</p>
<p>A second paragraph with more words so that readability treats this as an article body.</p></article></body></html>`)
	}))
	defer srv.Close()

	guarded, err := search.NewReader(search.ReaderConfig{})
	require.NoError(t, err)
	defer guarded.Close()
	tool, err := NewFetchPage(FetchPageOptions{Reader: guarded})
	require.NoError(t, err)
	res, err := tool.Run(context.Background(), []byte(fmt.Sprintf(`{"url":%q}`, srv.URL)))
	require.NoError(t, err)
	require.True(t, res.Failed(), "a loopback address must be refused: %s", res.Output)
	assert.Contains(t, res.Error, "cannot read "+srv.URL+": refused: 127.0.0.1 is a loopback address")
	assert.NotContains(t, res.Error, "AllowPrivate", "the model is not told how to lift the guard")

	for _, tt := range []struct{ url, want string }{
		{"file:///etc/passwd", "refused: only public http and https web addresses can be read"},
		{"http://169.254.169.254/latest/meta-data/", "refused: 169.254.169.254 is the cloud instance-metadata endpoint"},
	} {
		res, err = tool.Run(context.Background(), []byte(fmt.Sprintf(`{"url":%q}`, tt.url)))
		require.NoError(t, err)
		assert.Contains(t, res.Error, tt.want)
	}

	open, err := search.NewReader(search.ReaderConfig{Guard: netguard.Config{Allow: []string{"127.0.0.1"}}})
	require.NoError(t, err)
	defer open.Close()
	tool, err = NewFetchPage(FetchPageOptions{Reader: open})
	require.NoError(t, err)
	res, err = tool.Run(context.Background(), []byte(fmt.Sprintf(`{"url":%q}`, srv.URL)))
	require.NoError(t, err)
	require.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, "Title: Local page")
	assert.Contains(t, res.Output, "main content of the page")
}

// A full page of fetch_page, header and all, fits in what an agent shows
// the model of one result by default, so reading on at the offset the tool
// names skips nothing.
func TestFetchPageFitsTheAgentsWindow(t *testing.T) {
	fr := &fakeReader{page: &search.Page{
		URL: "https://example.com/a-long-page-with-a-long-path/" + strings.Repeat("x", 200), Title: strings.Repeat("Title ", 40),
		Published: time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC), Content: strings.Repeat("word ", 10*DefaultMaxOutput), Truncated: true}}
	tool, err := NewFetchPage(FetchPageOptions{Reader: fr})
	require.NoError(t, err)
	c, err := NewCollection(tool)
	require.NoError(t, err)
	for i, args := range []string{`{"url":"https://example.com/p"}`, `{"url":"https://example.com/p","offset":9000}`} {
		res, err := c.Execute(context.Background(), call(FetchPageName, args))
		require.NoError(t, err)
		require.False(t, res.Failed(), res.Error)
		assert.LessOrEqual(t, utf8.RuneCountInString(res.Output), DefaultMaxOutput, args)
		assert.Contains(t, res.Output, fmt.Sprintf("offset %d to read on", (i+1)*DefaultFetchMaxChars), "the tool names where to read on")
	}
}
