package local

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// A passage is the unit that is indexed and returned: a run of blocks from
// one file, with the lines it spans and a title naming its section.
type passage struct {
	start, end int // 1-based, inclusive
	title      string
	body       string
}

// maxTitleBytes bounds a passage title.
const maxTitleBytes = 300

// chunk cuts a document into passages of about target bytes. A heading
// starts a new passage (unless the passage so far holds only headings, so
// "# Guide" followed by "## Install" and text stay together). Blocks are
// never split unless one alone exceeds target; a passage cut for size
// repeats its last block at the start of the next when that block is small
// (at most target/4), so a fact straddling the cut is found whole in one of
// them. A passage still smaller than target/4 is not cut but grows past
// target instead, so passages stay within 1.25 × target and none is tiny. Every passage is titled with the document title and the headings
// above it ("Guide › Install › Linux").
func chunk(doc document, target int) []passage {
	var out []passage
	var cur []block
	curSize, curBody := 0, false
	var stack [6]string

	flush := func() {
		if len(cur) == 0 {
			return
		}
		parts := make([]string, 0, len(cur))
		for _, b := range cur {
			if t := b.text(); t != "" {
				parts = append(parts, t)
			}
		}
		if len(parts) > 0 {
			out = append(out, passage{
				start: cur[0].startLine(),
				end:   cur[len(cur)-1].endLine(),
				title: sectionTitle(doc.title, stack),
				body:  strings.Join(parts, "\n\n"),
			})
		}
		cur, curSize, curBody = nil, 0, false
	}

	for _, b := range splitBlocks(doc.blocks, target) {
		if b.heading > 0 {
			if curBody {
				flush()
			}
			stack[b.heading-1] = truncate(b.headingText, maxTitleBytes)
			for i := b.heading; i < len(stack); i++ {
				stack[i] = ""
			}
			cur = append(cur, b)
			curSize += b.size()
			continue
		}
		if curBody && curSize+b.size() > target && curSize > target/4 {
			last := cur[len(cur)-1]
			flush()
			if last.heading == 0 && last.size() <= target/4 {
				cur, curSize, curBody = []block{last}, last.size(), true
			}
		}
		cur = append(cur, b)
		curSize += b.size()
		curBody = true
	}
	flush()
	return out
}

// sectionTitle names a passage: the document title followed by the
// headings above the passage, skipping a top heading equal to the title.
func sectionTitle(docTitle string, stack [6]string) string {
	parts := make([]string, 0, 7)
	parts = append(parts, docTitle)
	for _, h := range stack {
		if h == "" || (len(parts) == 1 && h == docTitle) {
			continue
		}
		parts = append(parts, h)
	}
	return truncate(strings.Join(parts, " › "), maxTitleBytes)
}

// splitBlocks returns blocks with every non-heading block larger than
// target split into pieces of at most target bytes, at segment (line)
// boundaries and, for a single over-long segment, at white space.
func splitBlocks(blocks []block, target int) []block {
	out := make([]block, 0, len(blocks))
	for _, b := range blocks {
		if b.heading > 0 || b.size() <= target {
			out = append(out, b)
			continue
		}
		var piece []segment
		size := 0
		emit := func() {
			if len(piece) > 0 {
				out = append(out, block{segs: piece})
			}
			piece, size = nil, 0
		}
		for _, s := range b.segs {
			for _, part := range splitText(s.text, target) {
				if size > 0 && size+len(part) > target {
					emit()
				}
				piece = append(piece, segment{text: part, start: s.start, end: s.end})
				size += len(part)
			}
		}
		emit()
	}
	return out
}

// splitText cuts s into pieces of at most max bytes, preferring to cut
// after white space and never inside a UTF-8 sequence. The pieces
// concatenate to s.
func splitText(s string, max int) []string {
	if len(s) <= max {
		return []string{s}
	}
	var parts []string
	for len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		// Prefer the last white space in the second half of the window.
		if i := strings.LastIndexFunc(s[:cut], unicode.IsSpace); i >= max/2 {
			_, w := utf8.DecodeRuneInString(s[i:])
			cut = i + w
		}
		if cut == 0 { // max smaller than one rune: take the rune
			_, cut = utf8.DecodeRuneInString(s)
		}
		parts = append(parts, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		parts = append(parts, s)
	}
	return parts
}
