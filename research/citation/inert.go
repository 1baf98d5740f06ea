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

// budget makes inert the paragraphs of text whose cost passes
// paragraphBudget, or would take the document's past documentBudget. A
// paragraph's cost bounds what goldmark may do with it: its length times
// its openers (the characters from which goldmark looks ahead: brackets,
// parentheses, angle brackets, emphasis, backticks, '!' and '@', outside
// citations and escapes), plus each line's length times the containers
// (block quotes, list items) its start opens. Plain prose, long lists and
// tables cost little; text made of openers costs its square. Code blocks
// cost nothing: goldmark reads them in linear time. It returns the text
// and how many paragraphs it changed.
func budget(text string, ix *index) (string, int) {
	d := newDoc(text)
	var b strings.Builder
	total, changed, from := 0, 0, 0
	para := func(start, end int) {
		if start >= end {
			return
		}
		cost := (end-start)*openers(d, ix, start, end) + nesting(text, start, end)
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

// paragraphs calls fn on each stretch of text[from:to] that goldmark
// parses as one inline unit, as far as a scan of lines can tell: a run of
// non-blank lines, cut before each line that starts a list item (its text
// is the item's own) and around each line holding a '|' (a table row,
// whose cells are parsed one by one).
func paragraphs(text string, from, to int, fn func(start, end int)) {
	start := -1
	flush := func(at int) {
		if start >= 0 {
			fn(start, at)
		}
		start = -1
	}
	for ls := from; ls < to; {
		le := to
		if k := strings.IndexByte(text[ls:to], '\n'); k >= 0 {
			le = ls + k + 1
		}
		line := text[ls:le]
		switch {
		case strings.Trim(line, " \t\r\n") == "":
			flush(ls)
		case strings.IndexByte(line, '|') >= 0:
			flush(ls)
			fn(ls, le)
		case listItemStart(line):
			flush(ls)
			start = ls
		case start < 0:
			start = ls
		}
		ls = le
	}
	flush(to)
}

// listItemStart reports whether a line starts a list item: up to three
// spaces, then -, + or * or a number with . or ), then a space.
func listItemStart(line string) bool {
	i := 0
	for i < len(line) && i < 3 && line[i] == ' ' {
		i++
	}
	j := i
	for j < len(line) && j-i < 9 && line[j] >= '0' && line[j] <= '9' {
		j++
	}
	switch {
	case j > i && j < len(line) && (line[j] == '.' || line[j] == ')'):
		j++
	case j == i && i < len(line) && strings.IndexByte("-+*", line[i]) >= 0:
		j++
	default:
		return false
	}
	return j < len(line) && (line[j] == ' ' || line[j] == '\t')
}

// openers counts the characters of text[from:to] from which goldmark
// looks ahead, outside citations and backslash escapes.
func openers(d *doc, ix *index, from, to int) int {
	s := d.s
	n := 0
	for i := from; i < to; i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 < to && isASCIIPunct(s[i+1]) {
				i++
			}
		case '[':
			if end, ok := ix.citationAt(d, i); ok && end <= to {
				i = end - 1
				continue
			}
			n++
		case ']', '(', ')', '<', '>', '!', '*', '_', '~', '`', '@':
			n++
		}
	}
	return n
}

// nesting sums, over the lines of text[from:to], the line's length times
// the containers its start opens: "> > - 1. x" opens four.
func nesting(text string, from, to int) int {
	cost := 0
	for ls := from; ls < to; {
		le := to
		if k := strings.IndexByte(text[ls:to], '\n'); k >= 0 {
			le = ls + k + 1
		}
		depth, i := 0, ls
		for i < le {
			for i < le && (text[i] == ' ' || text[i] == '\t') {
				i++
			}
			j := i
			switch {
			case j < le && text[j] == '>':
				j++
			case j+1 < le && strings.IndexByte("-+*", text[j]) >= 0 && (text[j+1] == ' ' || text[j+1] == '\t'):
				j++
			default:
				for j < le && j-i < 9 && text[j] >= '0' && text[j] <= '9' {
					j++
				}
				if j == i || j+1 >= le || (text[j] != '.' && text[j] != ')') || (text[j+1] != ' ' && text[j+1] != '\t') {
					j = i
				} else {
					j++
				}
			}
			if j == i {
				break
			}
			depth++
			i = j
		}
		cost += (le - ls) * depth
		ls = le
	}
	return cost
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
