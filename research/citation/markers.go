package citation

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Marker returns the marker text of a citation's segments: for each,
// " [label](short URL)" — with the leading space — concatenated.
func Marker(segments []Source) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteString(" [")
		b.WriteString(s.Label)
		b.WriteString("](")
		b.WriteString(s.ShortURL)
		b.WriteString(")")
	}
	return b.String()
}

// InsertMarkers returns the concatenation of parts with each citation's
// marker inserted where the cited text ends.
//
// End is a UTF-8 byte offset into parts[Part]: it is clamped to that part
// and, when it falls inside a multi-byte character, moved forward to the
// next character boundary; then the byte lengths of the earlier parts are
// added. Citations are placed in (end, start) descending order with a
// stable sort, as if inserted one by one from the end backwards, so at one
// position markers appear by ascending start, and citations with the same
// start and end in reverse order. Start only orders. Citations without
// segments, or whose Part names no part, add nothing.
func InsertMarkers(parts []string, cits []Citation) string {
	text := strings.Join(parts, "")
	if len(cits) == 0 {
		return text
	}
	offsets := make([]int, len(parts))
	for i := 1; i < len(parts); i++ {
		offsets[i] = offsets[i-1] + len(parts[i-1])
	}
	type placed struct {
		start, end int
		marker     string
	}
	ps := make([]placed, 0, len(cits))
	size := len(text)
	for _, c := range cits {
		if len(c.Segments) == 0 || c.Part < 0 || c.Part >= len(parts) {
			continue
		}
		p := parts[c.Part]
		m := Marker(c.Segments)
		ps = append(ps, placed{
			start:  offsets[c.Part] + boundary(p, c.Start),
			end:    offsets[c.Part] + boundary(p, c.End),
			marker: m,
		})
		size += len(m)
	}
	// The reference inserts in this order, each at its end, from the end of
	// the text backwards.
	slices.SortStableFunc(ps, func(a, b placed) int {
		if a.end != b.end {
			return b.end - a.end
		}
		return b.start - a.start
	})
	// Each insertion lands before the ones already made at the same
	// position, so the final left-to-right order is the reverse.
	var b strings.Builder
	b.Grow(size)
	at := 0
	for i := len(ps) - 1; i >= 0; i-- {
		b.WriteString(text[at:ps[i].end])
		b.WriteString(ps[i].marker)
		at = ps[i].end
	}
	b.WriteString(text[at:])
	return b.String()
}

// boundary clamps the byte offset i to s and moves it forward to the next
// rune boundary.
func boundary(s string, i int) int {
	i = min(max(i, 0), len(s))
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}

// SourcesList renders sources as the numbered Markdown list that ends a
// report or an answer — "## Sources" and one "n. [title](url)" line each,
// numbered as Finalize numbered them — or "" when there are none.
//
// Titles come from web pages: each is put on one line, and the characters
// that Markdown or HTML would read (\ ` * _ [ ] < > &) are escaped, so a
// title can neither end its link early nor carry a tag. URLs are written
// as link destinations that cannot end early (spaces, backslashes,
// backticks, angle brackets and unbalanced parentheses percent-encoded).
// A URL that is not http, https or file is shown as code, not linked.
func SourcesList(sources []Source) string {
	if len(sources) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Sources\n\n")
	for i, s := range sources {
		title := s.Title
		if strings.TrimSpace(title) == "" {
			title = s.Label
		}
		if strings.TrimSpace(title) == "" {
			title = s.URL
		}
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString(". ")
		if !restorable(s.URL) {
			b.WriteString(escapeTitle(title))
			b.WriteString(" (`")
			b.WriteString(strings.Map(func(r rune) rune {
				if r == '`' || unicode.IsControl(r) {
					return -1
				}
				return r
			}, s.URL))
			b.WriteString("`)\n")
			continue
		}
		b.WriteString("[")
		b.WriteString(escapeTitle(title))
		b.WriteString("](")
		b.WriteString(renderURL(s.URL))
		b.WriteString(")\n")
	}
	return b.String()
}

// escapeTitle makes untrusted text safe as Markdown link text: one line,
// single spaces, control characters gone, and \ ` * _ [ ] < > &
// backslash-escaped.
func escapeTitle(t string) string {
	t = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(t, ""))
	t = strings.Join(strings.Fields(t), " ")
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		if strings.IndexByte("\\`*_[]<>&", t[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(t[i])
	}
	return b.String()
}
