package citation

import "strings"

// Inert text
//
// inert writes text so that no Markdown renderer reads a construct in it:
// every ASCII punctuation character is backslash-escaped, but for those of
// the citations Finalize wrote and of escapes already there. The text reads
// the same once rendered. It is the guard's last resort, and what budget
// does to a paragraph that goldmark would read in quadratic time.

// Budgets of the guard's parse, in length × punctuation of a paragraph:
// an answer's paragraphs are far below them, text built to make goldmark
// scan from every bracket to the end of its paragraph is not.
const (
	paragraphBudget = 1 << 22
	documentBudget  = 1 << 26
)

// budget makes inert the paragraphs of text whose cost — length times the
// punctuation outside citations and escapes — passes paragraphBudget, or
// would take the document's past documentBudget. Code blocks cost nothing:
// goldmark reads them in linear time. It returns the text and how many
// paragraphs it changed.
func budget(text string, ix *index) (string, int) {
	d := newDoc(text)
	var b strings.Builder
	total, changed, from := 0, 0, 0
	para := func(start, end int) {
		if start >= end {
			return
		}
		cost := (end - start) * punctuation(d, ix, start, end)
		if cost > paragraphBudget || total+cost > documentBudget {
			if b.Len() == 0 && from == 0 {
				b.Grow(len(text) + len(text)/4)
			}
			b.WriteString(text[from:start])
			b.WriteString(inert(d, ix, start, end))
			from = end
			changed++
			return
		}
		total += cost
	}
	at := 0
	for _, c := range codeBlocks(text) {
		paragraphs(text, at, c.start, para)
		at = c.end
	}
	paragraphs(text, at, len(text), para)
	if changed == 0 {
		return text, 0
	}
	b.WriteString(text[from:])
	return b.String(), changed
}

// paragraphs calls fn on each run of non-blank lines of text[from:to].
func paragraphs(text string, from, to int, fn func(start, end int)) {
	start := -1
	for ls := from; ls < to; {
		le := to
		if k := strings.IndexByte(text[ls:to], '\n'); k >= 0 {
			le = ls + k + 1
		}
		blank := strings.Trim(text[ls:le], " \t\r\n") == ""
		switch {
		case blank && start >= 0:
			fn(start, ls)
			start = -1
		case !blank && start < 0:
			start = ls
		}
		ls = le
	}
	if start >= 0 {
		fn(start, to)
	}
}

// punctuation counts the ASCII punctuation of text[from:to] outside
// citations and backslash escapes.
func punctuation(d *doc, ix *index, from, to int) int {
	s := d.s
	n := 0
	for i := from; i < to; i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < to && isASCIIPunct(s[i+1]):
			i++
		case c == '[':
			if end, ok := ix.citationAt(d, i); ok && end <= to {
				i = end - 1
				continue
			}
			n++
		case isASCIIPunct(c):
			n++
		}
	}
	return n
}

// inert returns text[from:to] with every ASCII punctuation character
// escaped, but for citations and escapes already there.
func inert(d *doc, ix *index, from, to int) string {
	text := d.s
	var b strings.Builder
	b.Grow(to - from + (to-from)/4)
	for i := from; i < to; i++ {
		c := text[i]
		switch {
		case c == '\\' && i+1 < to && isASCIIPunct(text[i+1]):
			b.WriteString(text[i : i+2])
			i++
			continue
		case c == '[':
			if end, ok := ix.citationAt(d, i); ok && end <= to {
				b.WriteString(text[i:end])
				i = end - 1
				continue
			}
		}
		if isASCIIPunct(c) {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}
