package search

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
)

// mediaKind is how the Reader treats a media type.
type mediaKind int

const (
	kindBinary mediaKind = iota
	kindHTML
	kindMarkdown
	kindJSON
	kindText
	kindPDF
)

// mediaType returns the lower-case media type of a fetched body: the
// Content-Type header's, or a sniffed one when the header is missing or
// says nothing ("application/octet-stream").
func mediaType(header string, body []byte) string {
	mt, _, err := mime.ParseMediaType(header)
	mt = strings.ToLower(mt)
	if bytes.HasPrefix(body, []byte("%PDF-")) {
		return "application/pdf"
	}
	switch {
	case err != nil, mt == "", mt == "application/octet-stream", mt == "binary/octet-stream", mt == "application/unknown":
		sniffed, _, _ := mime.ParseMediaType(http.DetectContentType(body))
		return strings.ToLower(sniffed)
	}
	return mt
}

func classifyMedia(mt string) mediaKind {
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return kindHTML
	case mt == "text/markdown" || mt == "text/x-markdown":
		return kindMarkdown
	case mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json") || mt == "application/x-ndjson":
		return kindJSON
	case mt == "application/pdf" || mt == "application/x-pdf":
		return kindPDF
	case strings.HasPrefix(mt, "text/"),
		mt == "application/xml", strings.HasSuffix(mt, "+xml"),
		mt == "application/javascript", mt == "application/x-yaml", mt == "application/yaml",
		mt == "application/toml", mt == "application/x-sh":
		return kindText
	}
	return kindBinary
}

// decodeText converts body to UTF-8. The charset comes from a byte-order
// mark, the Content-Type header or (for HTML) a <meta> declaration; without
// a BOM or a header charset, a body that is valid UTF-8 is taken as UTF-8
// (the WHATWG default of windows-1252 garbles the many pages that declare
// nothing or declare it late), and otherwise the declared or default legacy
// encoding applies.
func decodeText(body []byte, contentType string) string {
	enc, name, certain := charset.DetermineEncoding(body, contentType)
	if (!certain || name == "utf-8") && utf8.Valid(trimPartialRune(body)) {
		enc = encoding.Nop // the UTF-8 decoder would copy valid UTF-8 for nothing
	}
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	if enc == encoding.Nop || enc == nil {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	// Decoders for UTF-16 keep a BOM as U+FEFF.
	return strings.TrimPrefix(strings.ToValidUTF8(string(out), "\uFFFD"), "\uFEFF")
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b (a
// body cut at the size limit).
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-3; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// looksBinary reports text that is not really text: NUL bytes, or many
// control characters, in its first 8 KiB.
func looksBinary(text string) bool {
	sample := text
	if len(sample) > 8<<10 {
		sample = sample[:8<<10]
	}
	if sample == "" {
		return false
	}
	controls := 0
	for _, r := range sample {
		switch {
		case r == 0:
			return true
		case r < 0x20 && r != '\n' && r != '\r' && r != '\t' && r != '\f' && r != '\v' && r != 0x1b:
			controls++
		}
	}
	return controls*10 > utf8.RuneCountInString(sample)
}

// toPage turns a fetched body into a Page; maxChars > 0 lets an HTML
// page's conversion stop after that many characters (see convertHTML).
func (r *Reader) toPage(ctx context.Context, f *fetched, maxChars int) (*Page, error) {
	mt := mediaType(f.contentType, f.body)
	where := f.url.Redacted()
	switch classifyMedia(mt) {
	case kindPDF:
		return nil, fmt.Errorf("search: %s is a PDF; reading PDF documents is not supported: %w", where, ErrUnsupportedContent)
	case kindBinary:
		return nil, fmt.Errorf("search: %s is %s, not a text document: %w", where, mt, ErrUnsupportedContent)
	case kindHTML:
		p, err := r.convertHTML(ctx, decodeText(f.body, f.contentType), f.url, maxChars)
		if err != nil {
			return nil, fmt.Errorf("search: converting %s: %w", where, err)
		}
		p.ContentType = mt
		return p, nil
	}
	text := decodeText(f.body, f.contentType)
	if looksBinary(text) {
		return nil, fmt.Errorf("search: %s claims to be %s but holds binary data: %w", where, mt, ErrUnsupportedContent)
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	p := &Page{ContentType: mt}
	switch classifyMedia(mt) {
	case kindMarkdown:
		p.Content = strings.TrimSpace(text)
		p.Title = markdownTitle(p.Content)
	case kindJSON:
		p.Content = jsonBlock(text, f.truncated)
	default:
		p.Content = strings.TrimSpace(text)
	}
	return p, nil
}

// markdownTitle returns the text of the first level-one ATX heading.
func markdownTitle(md string) string {
	for _, line := range strings.SplitN(md, "\n", 200) {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "# "); ok {
			return strings.TrimSpace(strings.TrimRight(t, "#"))
		}
	}
	return ""
}

// jsonBlock shows JSON as a fenced code block, indented when it parses.
func jsonBlock(text string, truncated bool) string {
	text = strings.TrimSpace(text)
	if !truncated {
		var buf bytes.Buffer
		if json.Indent(&buf, []byte(text), "", "  ") == nil {
			text = buf.String()
		}
	}
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + "json\n" + text + "\n" + fence
}
