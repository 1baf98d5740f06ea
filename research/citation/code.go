package citation

import (
	"slices"
	"strings"
)

// Code in an answer is shown as it is by any Markdown renderer, so Finalize
// and FromLabels leave it alone: fenced code blocks (``` or ~~~), indented
// code blocks and inline code spans. Because a link that one of them took
// for code would survive unchecked, code is recognised only where every
// CommonMark renderer surely sees it; where in doubt, the text is treated
// as prose and its links are checked:
//
//   - a fence indented by n > 0 spaces ends at a line indented less (it
//     may sit in a list item that such a line closes);
//   - an indented code block must follow a blank line (or start the text)
//     and no list item or block quote may have opened before it without a
//     blank line and an unindented paragraph since;
//   - inline code spans are recognised only in a paragraph (text between
//     blank lines) whose every backtick run pairs with one on its own line,
//     none of them after a backslash, inside <…> or inside an inline link's
//     (…), and only on lines where no span holds a '|' (a table would
//     split it).

// span is the byte range [start, end) of a code region.
type span struct{ start, end int }

// codeRegions returns the code regions of s in order, not overlapping.
func codeRegions(s string) []span {
	blocks := codeBlocks(s)
	var out []span
	from := 0
	for _, b := range blocks {
		out = append(out, codeSpans(s, from, b.start)...)
		out = append(out, b)
		from = b.end
	}
	return append(out, codeSpans(s, from, len(s))...)
}

// codeBlocks returns the fenced and indented code blocks of s, each from
// the start of its first line to the end of its last.
func codeBlocks(s string) []span {
	var (
		out                  []span
		prevBlank            = true
		inContainer          bool
		indented             = -1 // start of the open indented block, or -1
		indentedEnd          int
		fenceStart           = -1 // start of the open fence, or -1
		fenceChar            byte
		fenceLen, fenceInden int
	)
	closeIndented := func() {
		if indented >= 0 {
			out = append(out, span{indented, indentedEnd})
			indented = -1
		}
	}
	for ls := 0; ls < len(s); {
		le := len(s)
		if k := strings.IndexByte(s[ls:], '\n'); k >= 0 {
			le = ls + k + 1
		}
		line := strings.TrimRight(s[ls:le], "\r\n")
		col, k := indentation(line)
		blank := k == len(line)
		if fenceStart >= 0 {
			switch {
			case !blank && fenceInden > 0 && col < fenceInden:
				out = append(out, span{fenceStart, ls})
				fenceStart = -1
			case col <= 3 && isFenceClose(line[k:], fenceChar, fenceLen):
				out = append(out, span{fenceStart, le})
				fenceStart = -1
				prevBlank = false
				ls = le
				continue
			default:
				ls = le
				continue
			}
		}
		switch {
		case blank:
			prevBlank = true
		case indented >= 0 && col >= 4:
			indentedEnd = le
		case col >= 4 && prevBlank && !inContainer:
			indented, indentedEnd = ls, le
		default:
			closeIndented()
			if c, n, ok := fenceOpen(line[k:]); ok && col <= 3 {
				fenceStart, fenceChar, fenceLen, fenceInden = ls, c, n, col
			} else if opensContainer(line[k:]) {
				inContainer = true
			} else if col == 0 && prevBlank {
				inContainer = false
			}
			prevBlank = false
		}
		if !blank {
			prevBlank = false
		}
		ls = le
	}
	closeIndented()
	if fenceStart >= 0 {
		out = append(out, span{fenceStart, len(s)})
	}
	slices.SortFunc(out, func(a, b span) int { return a.start - b.start })
	return out
}

// indentation returns the column of a line's first non-blank character
// (tabs stop every 4 columns) and its byte offset.
func indentation(line string) (col, k int) {
	for k < len(line) {
		switch line[k] {
		case ' ':
			col++
		case '\t':
			col += 4 - col%4
		default:
			return col, k
		}
		k++
	}
	return col, k
}

// fenceOpen reports whether s (a line without its indentation) opens a
// code fence, and its character and length.
func fenceOpen(s string) (byte, int, bool) {
	if s == "" || (s[0] != '`' && s[0] != '~') {
		return 0, 0, false
	}
	c := s[0]
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	if n < 3 || (c == '`' && strings.IndexByte(s[n:], '`') >= 0) {
		return 0, 0, false
	}
	return c, n, true
}

func isFenceClose(s string, c byte, n int) bool {
	m := 0
	for m < len(s) && s[m] == c {
		m++
	}
	return m >= n && strings.Trim(s[m:], " \t") == ""
}

// opensContainer reports whether a line (without its indentation) may
// start a block quote or a list item.
func opensContainer(s string) bool {
	if s == "" {
		return false
	}
	switch s[0] {
	case '>':
		return true
	case '-', '*', '+':
		return len(s) == 1 || s[1] == ' ' || s[1] == '\t'
	}
	d := 0
	for d < len(s) && d < 10 && s[d] >= '0' && s[d] <= '9' {
		d++
	}
	return d > 0 && d < 10 && d < len(s) && (s[d] == '.' || s[d] == ')') && (d+1 == len(s) || s[d+1] == ' ' || s[d+1] == '\t')
}

// codeSpans returns the inline code spans of s[from:to], paragraph by
// paragraph.
func codeSpans(s string, from, to int) []span {
	if strings.IndexByte(s[from:to], '`') < 0 {
		return nil
	}
	var out []span
	for from < to {
		end := nextBlankLine(s, from, to)
		out = append(out, paragraphSpans(s, from, end)...)
		from = end
	}
	return out
}

// nextBlankLine returns the end of the first blank line in s[from:to], or
// to.
func nextBlankLine(s string, from, to int) int {
	for ls := from; ls < to; {
		le := to
		if k := strings.IndexByte(s[ls:to], '\n'); k >= 0 {
			le = ls + k + 1
		}
		if ls > from && strings.Trim(s[ls:le], " \t\r\n") == "" {
			return le
		}
		ls = le
	}
	return to
}

// paragraphSpans pairs the backtick runs of a paragraph, s[from:to], and
// returns its code spans, or none when any run is in doubt.
func paragraphSpans(s string, from, to int) []span {
	var out []span
	p := s[from:to]
	for ls := 0; ls < len(p); {
		le := len(p)
		if k := strings.IndexByte(p[ls:], '\n'); k >= 0 {
			le = ls + k + 1
		}
		line := p[ls:le]
		var spans []span
		pipe := false
		for i := 0; i < len(line); {
			if line[i] != '`' {
				i++
				continue
			}
			n := runLen(line, i)
			j := i + n
			for j < len(line) {
				k := strings.IndexByte(line[j:], '`')
				if k < 0 {
					j = len(line)
					break
				}
				j += k
				if m := runLen(line, j); m == n {
					break
				} else {
					j += m
				}
			}
			if j >= len(line) || (i > 0 && line[i-1] == '\\') {
				return nil // a run without a partner on its line, or escaped
			}
			pipe = pipe || strings.IndexByte(line[i:j], '|') >= 0
			spans = append(spans, span{from + ls + i, from + ls + j + n})
			i = j + n
		}
		if !pipe {
			out = append(out, spans...)
		}
		ls = le
	}
	if len(out) == 0 || !clearOfLinks(p) {
		return nil
	}
	return out
}

// runLen returns the length of the backtick run at s[i].
func runLen(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == '`' {
		n++
	}
	return n
}

// clearOfLinks reports whether no backtick of the paragraph p lies inside
// <…> or inside the (…) of an inline link, which a renderer reads before
// any code span in them.
func clearOfLinks(p string) bool {
	d := newDoc(p)
	for i := 0; i < len(p); i++ {
		var end int
		switch {
		case p[i] == '<':
			end = d.index(i+1, ">")
		case p[i] == ']' && i+1 < len(p) && p[i+1] == '(':
			end = linkExtent(d, i+1)
		default:
			continue
		}
		if end < 0 {
			continue
		}
		if k := d.index(i, "`"); k >= 0 && k < end {
			return false
		}
	}
	return true
}

// linkExtent returns where the inline link destination and title that
// open at s[open] == '(' end, as far as a renderer might read them.
func linkExtent(d *doc, open int) int {
	if _, end, ok := inlineTargets(d, open); ok {
		return end
	}
	if j := d.index(open+1, ")"); j >= 0 {
		return j + 1
	}
	return -1
}
