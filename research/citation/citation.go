package citation

import (
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/deepgraph/deepgraph/llm"
)

// ShortURLPrefix starts every short URL. Short URLs are tokens that stand
// for long source URLs in prompts; they do not resolve.
const ShortURLPrefix = "https://vertexaisearch.cloud.google.com/id/"

// shortHostPath is ShortURLPrefix without its scheme: what marks a short-URL
// token in model output, whatever scheme the model wrote.
const shortHostPath = "vertexaisearch.cloud.google.com/id/"

// maxLabelRunes caps a label made from an untrusted title.
const maxLabelRunes = 64

// Source is one cited source: its label (shown as the link text of a
// marker), the short URL the models see, the real URL, and the title.
type Source struct {
	Label    string `json:"label"`
	ShortURL string `json:"short_url"`
	URL      string `json:"url"`
	Title    string `json:"title"`
	// Redirects are URLs that led to URL (a grounding redirect resolved to
	// the real page): gathered too, so a citation of one maps to this
	// source, shown with URL.
	Redirects []string `json:"redirects,omitempty"`
}

// Citation ties the text that ends at End to the sources in Segments.
// Start and End are UTF-8 byte offsets into the text part Part, as the
// grounding metadata gave them (missing start = 0); InsertMarkers clamps
// them. Segments may be empty: such a citation produces no marker.
type Citation struct {
	Start    int      `json:"start_index"`
	End      int      `json:"end_index"`
	Part     int      `json:"part_index"`
	Segments []Source `json:"segments"`
}

// Options tune how grounding metadata becomes citations. The zero value is
// the recommended behaviour.
type Options struct {
	// ReferenceLabels reproduces the reference implementation's label rule
	// exactly, for parity tests against it: a label is the part of the title
	// before its first '.', and a source whose title has no '.' (or is
	// empty) is silently dropped from its citation, and labels are used as
	// they are, not made safe as Markdown link text. By default such sources
	// are kept: a title without a '.' is the label as it is, an empty title
	// falls back to the URI's host, and labels are made safe as Markdown link
	// text.
	ReferenceLabels bool
}

// ShortURL returns the short URL of the index-th source of the query with
// id queryID: ShortURLPrefix + "<queryID>-<index>".
func ShortURL(queryID, index int) string {
	return ShortURLPrefix + strconv.Itoa(queryID) + "-" + strconv.Itoa(index)
}

// ResolveURLs maps each distinct chunk URI to its short URL. The index in a
// short URL is that of the first chunk with the URI, so repeated URIs share
// one short URL and the numbering may have gaps ("7-0", "7-1", "7-3").
// Chunks without a URI are skipped: there is nothing to restore them to.
func ResolveURLs(chunks []llm.GroundingChunk, queryID int) map[string]string {
	resolved := make(map[string]string, len(chunks))
	for i, c := range chunks {
		if c.URI == "" {
			continue
		}
		if _, ok := resolved[c.URI]; !ok {
			resolved[c.URI] = ShortURL(queryID, i)
		}
	}
	return resolved
}

// Citations turns grounding supports into citations, in API order.
//
// A support whose EndIndex is 0 or negative is skipped: the API omits
// zero-valued fields, so a missing segment, a missing end and an end of 0
// all arrive as EndIndex 0, and none of them covers any text. A missing
// start is 0. Each chunk index becomes one segment unless it is out of
// range, its URI has no entry in resolved, or (with ReferenceLabels) its
// title has no '.'. A citation whose segments all went is kept, empty.
// A nil grounding gives nil.
func Citations(g *llm.Grounding, resolved map[string]string, opts Options) []Citation {
	if g == nil {
		return nil
	}
	var out []Citation
	for _, s := range g.Supports {
		if s.EndIndex <= 0 {
			continue
		}
		c := Citation{Start: s.StartIndex, End: s.EndIndex, Part: s.PartIndex, Segments: []Source{}}
		for _, ci := range s.ChunkIndices {
			if ci < 0 || ci >= len(g.Chunks) {
				continue
			}
			chunk := g.Chunks[ci]
			short, ok := resolved[chunk.URI]
			if !ok || chunk.URI == "" {
				continue
			}
			label, ok := chunkLabel(chunk, opts)
			if !ok {
				continue
			}
			c.Segments = append(c.Segments, Source{Label: label, ShortURL: short, URL: chunk.URI, Title: chunk.Title})
		}
		out = append(out, c)
	}
	return out
}

// Ground runs the whole web-research citation step on a grounded reply: it
// resolves short URLs for queryID, builds the citations, inserts their
// markers into the reply's text and returns that text with the sources the
// markers point to (every segment of every citation, in citation order,
// duplicates kept).
//
// The text is the concatenation of resp.Parts, or resp.Content when Parts
// is empty. Citations whose Part names no part are left out. A nil reply
// gives ""; a reply without grounding, chunks or supports gives its text
// unchanged and no sources.
func Ground(resp *llm.Response, queryID int, opts Options) (string, []Source) {
	if resp == nil {
		return "", nil
	}
	parts := resp.Parts
	if len(parts) == 0 {
		parts = []string{resp.Content}
	}
	g := resp.Grounding
	if g == nil || len(g.Chunks) == 0 || len(g.Supports) == 0 {
		return strings.Join(parts, ""), nil
	}
	cits := Citations(g, ResolveURLs(g.Chunks, queryID), opts)
	kept := cits[:0]
	for _, c := range cits {
		if c.Part >= 0 && c.Part < len(parts) {
			kept = append(kept, c)
		}
	}
	var sources []Source
	for _, c := range kept {
		sources = append(sources, c.Segments...)
	}
	return InsertMarkers(parts, kept), sources
}

// chunkLabel returns the label of a chunk's source, or false when the
// reference rule drops it.
func chunkLabel(c llm.GroundingChunk, opts Options) (string, bool) {
	if opts.ReferenceLabels {
		// Python: title.split('.')[:-1][0] — the text before the first '.',
		// IndexError (swallowed) when there is no '.'.
		i := strings.IndexByte(c.Title, '.')
		if i < 0 {
			return "", false
		}
		return c.Title[:i], true
	}
	return titleLabel(c.Title, c.URI), true
}

// titleLabel is the default label rule: the text of the title before its
// first '.', the whole title when that is empty, the URI's host when the
// title is empty, made safe as Markdown link text.
func titleLabel(title, uri string) string {
	t := cleanLabel(title)
	if i := strings.IndexByte(t, '.'); i > 0 {
		if l := strings.TrimSpace(t[:i]); l != "" {
			return l
		}
	}
	if t != "" {
		return t
	}
	if h := hostOf(uri); h != "" {
		return h
	}
	return "source"
}

// cleanLabel makes untrusted text usable as the text of a Markdown link:
// one line, single spaces, no brackets or backslashes (which would end or
// escape the link text), at most maxLabelRunes runes.
func cleanLabel(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '[':
			return '('
		case r == ']':
			return ')'
		case r == '\\':
			return '/'
		case unicode.IsControl(r) || unicode.IsSpace(r):
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > maxLabelRunes {
		n := 0
		for i := range s {
			if n == maxLabelRunes {
				s = strings.TrimSpace(s[:i]) + "…"
				break
			}
			n++
		}
	}
	return s
}

// hostOf returns the host of a URL without a leading "www.", or "".
func hostOf(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return ""
	}
	h := strings.ToLower(u.Hostname())
	return cleanLabel(strings.TrimPrefix(h, "www."))
}

// hostLabel is the label of a search result: the first component of its
// host without "www." (the whole host for IP addresses), the file name for
// URLs without a host (file://), else the title's label, else "source".
func hostLabel(title, raw string) string {
	if h := hostOf(raw); h != "" {
		if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
			return h
		}
		if i := strings.IndexByte(h, '.'); i > 0 {
			return h[:i]
		}
		return h
	}
	if u, err := url.Parse(strings.TrimSpace(raw)); err == nil && u.Path != "" {
		base := path.Base(u.Path)
		base = strings.TrimSuffix(base, path.Ext(base))
		if l := cleanLabel(base); l != "" && l != "." && l != "/" {
			return l
		}
	}
	if strings.TrimSpace(title) != "" {
		return titleLabel(title, "")
	}
	return "source"
}

// ForResult makes the Source of the index-th search result of the query
// with id queryID, for back ends that search with an API and let any model
// summarise: the label comes from the URL's host ("www.bbc.co.uk" → "bbc"),
// the short URL is ShortURL(queryID, index).
func ForResult(title, rawURL string, queryID, index int) Source {
	return Source{
		Label:    hostLabel(title, rawURL),
		ShortURL: ShortURL(queryID, index),
		URL:      rawURL,
		Title:    title,
	}
}
