package search

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// ReadHTML extracts the main content of a document that is already at hand
// — the DOM of a page a browser rendered — as Read does for a page it
// fetches: the title, the metadata and the main content as Markdown, with
// links made absolute against pageURL. Nothing is fetched, so no SSRF check
// applies; pageURL (an http or https URL) only names the page. html is
// untrusted, and is converted within MaxBytes of the Reader like a fetched
// body: a longer document is cut and the Page marked Truncated.
func (r *Reader) ReadHTML(ctx context.Context, pageURL, html string) (*Page, error) {
	u, err := url.Parse(strings.TrimSpace(pageURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("search: ReadHTML: %q is not an http or https URL: %w", pageURL, ErrBadRequest)
	}
	truncated := false
	if int64(len(html)) > r.maxBytes {
		html, truncated = html[:r.maxBytes], true
	}
	p, err := r.convertHTML(ctx, html, u, 0)
	if err != nil {
		return nil, fmt.Errorf("search: converting %s: %w", u.Redacted(), err)
	}
	p.URL, p.ContentType, p.Truncated = u.String(), "text/html", truncated
	return p, nil
}
