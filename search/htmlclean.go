package search

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
)

// stripHTML is a tokenizer pass run before the HTML is parsed: it copies
// the document byte for byte except for the parts that never hold readable
// text and that prune would remove after parsing anyway — comments,
// scripts (JSON-LD metadata excepted, Readability reads it), styles,
// iframes and SVG subtrees — so that the parser, Readability
// and the converter walk a smaller tree. Real pages spend a third to a
// half of their bytes on these.
//
// With a non-zero scan it also stops copying at the first tag after the
// document's text (counted as non-space characters, markup and dropped
// parts excluded), its elements or its bytes exceed the scan's bounds, and
// reports cut: the parser closes whatever is open, and the rest of the
// page is never parsed.
//
// The tokenizer sees the document as the parser would for these purposes:
// it enters raw text after <script>, <style>, <title>, <textarea> … like
// the parser, and inside SVG it is kept out of raw text (as the
// parser does for foreign content) until the subtree ends or an HTML tag
// breaks out of it. Where the two could still disagree (a <textarea>
// inside a <select>), the tokenizer only keeps more than it must.
func stripHTML(doc string, limit scan) (out string, cut bool) {
	z := html.NewTokenizer(strings.NewReader(doc))
	var b strings.Builder
	b.Grow(len(doc) / 2)
	var (
		dropRaw string // a raw-text element being dropped, up to its end tag
		foreign string // "svg" while inside an SVG subtree
		depth   int    // nesting of foreign within itself
		text    int    // non-space characters of text copied
		tags    int    // start tags copied
	)
	// Text such as "<" or "&am" followed, after a dropped part, by "a" or
	// "p;" would join into markup the page does not have: an empty
	// comment keeps them apart.
	risky := false
	sep := func() {
		if risky {
			b.WriteString("<!---->")
			risky = false
		}
	}
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return b.String(), false
		}
		if dropRaw != "" {
			if tt == html.EndTagToken {
				if name, _ := z.TagName(); string(name) == dropRaw {
					dropRaw = ""
				}
			}
			sep()
			continue
		}
		if foreign != "" {
			switch tt {
			case html.StartTagToken, html.SelfClosingTagToken:
				name, hasAttr := z.TagName()
				switch {
				case string(name) == foreign && tt == html.StartTagToken:
					depth++
				case breaksOutOfForeign(name, hasAttr, z):
					foreign, depth = "", 0
					z.AllowCDATA(false)
				}
			case html.EndTagToken:
				name, _ := z.TagName()
				switch {
				case string(name) == foreign:
					if depth--; depth == 0 {
						foreign = ""
						z.AllowCDATA(false)
						sep()
						continue // the subtree's own end tag goes too
					}
				case string(name) == "p" || string(name) == "br":
					foreign, depth = "", 0
					z.AllowCDATA(false)
				}
			}
			if foreign != "" {
				if tt == html.StartTagToken {
					z.NextIsNotRawText()
				}
				sep()
				continue
			}
			// An HTML tag closed the foreign subtree: it is kept below.
		}
		switch tt {
		case html.CommentToken:
			sep()
			continue
		case html.TextToken:
			text += visibleChars(z.Raw())
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			if limit.text > 0 && (text > limit.text || tags > limit.tags || b.Len() > limit.bytes) {
				return b.String(), true
			}
			if tt == html.EndTagToken {
				break
			}
			// The tokenizer enters raw text after <script/> as after
			// <script>, and so does the parser: both drop to the end tag.
			name, hasAttr := z.TagName()
			switch string(name) {
			case "script":
				if !hasAttr || !isJSONLD(z) {
					dropRaw = "script"
					sep()
					continue
				}
			case "style", "iframe":
				dropRaw = string(name)
				sep()
				continue
			case "svg":
				if tt == html.StartTagToken {
					foreign, depth = string(name), 1
					z.NextIsNotRawText()
					z.AllowCDATA(true)
				}
				sep()
				continue
			}
		}
		if tt == html.StartTagToken {
			tags++
		}
		raw := z.Raw()
		risky = tt == html.TextToken && bytes.ContainsAny(raw, "<&")
		b.Write(raw)
	}
}

// scan bounds the part of a document stripHTML lets through; the zero
// value lets everything through.
type scan struct {
	text  int // non-space characters of text
	tags  int // start tags
	bytes int // of markup and text kept
}

// Proportions of a scan to its text: real pages have an element per 20 to
// 50 characters of text and 3 to 10 bytes of markup (scripts and styles
// removed) per character; these bounds leave room for markup-heavy pages
// and stop only pathological ones (a page of empty elements or of inline
// data: images) early.
const (
	scanTagsPerChar  = 1
	scanBytesPerChar = 16
)

// scanFor returns the scan of a page read for text characters of text.
func scanFor(text int) scan {
	return scan{text: text, tags: text * scanTagsPerChar, bytes: text * scanBytesPerChar}
}

// visibleChars counts the non-space characters of raw text (UTF-8
// sequences count once; entities count as written).
func visibleChars[T string | []byte](raw T) int {
	n := 0
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f':
		case c&0xC0 == 0x80: // continuation byte
		default:
			n++
		}
	}
	return n
}

// isJSONLD reports a <script type="application/ld+json">; it consumes the
// tag's attributes.
func isJSONLD(z *html.Tokenizer) bool {
	for {
		key, val, more := z.TagAttr()
		if string(key) == "type" && bytes.Contains(bytes.ToLower(val), []byte("ld+json")) {
			return true
		}
		if !more {
			return false
		}
	}
}

// breakoutTags end foreign content when they start inside it (HTML's "in
// foreign content" insertion mode); <font> does so only with color, face
// or size.
var breakoutTags = map[string]bool{
	"b": true, "big": true, "blockquote": true, "body": true, "br": true, "center": true,
	"code": true, "dd": true, "div": true, "dl": true, "dt": true, "em": true, "embed": true,
	"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "head": true,
	"hr": true, "i": true, "img": true, "li": true, "listing": true, "menu": true, "meta": true,
	"nobr": true, "ol": true, "p": true, "pre": true, "ruby": true, "s": true, "small": true,
	"span": true, "strong": true, "strike": true, "sub": true, "sup": true, "table": true,
	"tt": true, "u": true, "ul": true, "var": true,
}

func breaksOutOfForeign(name []byte, hasAttr bool, z *html.Tokenizer) bool {
	if breakoutTags[string(name)] {
		return true
	}
	if string(name) != "font" || !hasAttr {
		return false
	}
	for {
		key, _, more := z.TagAttr()
		switch string(key) {
		case "color", "face", "size":
			return true
		}
		if !more {
			return false
		}
	}
}
