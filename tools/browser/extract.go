package browser

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/deepgraph/deepgraph/tools"
)

// maxHTML bounds the rendered document extract_content converts.
const maxHTML = 5 << 20

// extract reads the current page's rendered document through the reader:
// its main content as Markdown, bounded per call. With a goal, a page too
// long for one call shows the parts that match the goal first.
func (s *Session) extract(ctx context.Context, r *running, a Args) outcome {
	t, o := s.tabFor(r)
	if o != nil {
		return *o
	}
	w, err := s.world(ctx, t)
	if err != nil {
		return fail("reading the page failed: %v", err)
	}
	var doc struct {
		HTML, Title, URL string
		Cut              bool
	}
	if err := eval(ctx, t, w, fmt.Sprintf("__dg.html(%d)", maxHTML), &doc); err != nil {
		return fail("reading the page failed: %v", err)
	}
	if u, err := url.Parse(doc.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fail("extract_content reads web pages; tab %d shows %s", t.id, clip(doc.URL, 100))
	}
	p, err := s.opts.Reader.ReadHTML(ctx, doc.URL, doc.HTML)
	if err != nil {
		return fail("the page could not be read: %v", strings.TrimPrefix(err.Error(), "search: "))
	}
	title := p.Title
	if title == "" {
		title = doc.Title
	}
	offset := 0
	if a.Offset != nil {
		offset = *a.Offset
	}
	text, failed := formatContent(title, doc.URL, strings.TrimSpace(p.Content), a.Goal, offset, s.opts.MaxContentChars)
	if failed {
		return fail("%s", text)
	}
	if doc.Cut || p.Truncated {
		text += "\n[the page is larger than the reader reads; its end is missing]\n"
	}
	return outcome{text: text, sources: []tools.Source{{URL: doc.URL, Title: clip(title, 200)}}}
}

// formatContent shows content from offset, at most maxChars characters;
// a goal on a longer page, from the start, shows the blocks that match it
// first instead.
func formatContent(title, pageURL, content, goal string, offset, maxChars int) (string, bool) {
	total := utf8.RuneCountInString(content)
	if offset > 0 && offset >= total {
		return fmt.Sprintf("offset %d is past the end of the page's content (%d characters)", offset, total), true
	}
	var b strings.Builder
	if t := clip(title, 200); t != "" {
		fmt.Fprintf(&b, "Title: %s\n", t)
	}
	fmt.Fprintf(&b, "URL: %s\n", clip(pageURL, 500))
	if g := clip(goal, 200); g != "" {
		fmt.Fprintf(&b, "Goal: %s\n", g)
	}
	if total == 0 {
		b.WriteString("\n(the page has no readable text content)\n")
		return b.String(), false
	}
	if goal != "" && offset == 0 && total > maxChars {
		if focused, shown, ok := focus(content, goal, maxChars); ok {
			fmt.Fprintf(&b, "The page has %d characters: shown are the parts that match the goal (%d characters, in page order, … marks what is left out). "+
				"Read the whole page in order with offset 0, %d, …\n\n", total, shown, maxChars)
			b.WriteString(focused)
			b.WriteString("\n")
			return b.String(), false
		}
	}
	runes := []rune(content)
	end := min(offset+maxChars, total)
	if offset > 0 {
		fmt.Fprintf(&b, "Showing characters %d to %d of %d.\n", offset, end, total)
	}
	b.WriteString("\n")
	b.WriteString(string(runes[offset:end]))
	b.WriteString("\n")
	if end < total {
		fmt.Fprintf(&b, "\n[content cut at character %d of %d; call extract_content with offset %d to read on]\n", end, total, end)
	}
	return b.String(), false
}

// focus picks the blocks (paragraphs, list items, headings with their
// text) of content that share the most words with goal, up to maxChars
// characters, and returns them in page order; ok is false when no block
// matches.
func focus(content, goal string, maxChars int) (text string, shown int, ok bool) {
	terms := goalTerms(goal)
	if len(terms) == 0 {
		return "", 0, false
	}
	blocks := strings.Split(content, "\n\n")
	type scored struct {
		i, score int
	}
	var hits []scored
	for i, bl := range blocks {
		words := goalTerms(bl)
		score := 0
		for t := range terms {
			if words[t] {
				score++
			}
		}
		if score > 0 {
			hits = append(hits, scored{i, score})
		}
	}
	if len(hits) == 0 {
		return "", 0, false
	}
	slices.SortStableFunc(hits, func(a, b scored) int { return b.score - a.score })
	var chosen []int
	for _, h := range hits {
		n := utf8.RuneCountInString(blocks[h.i])
		if shown+n > maxChars {
			if len(chosen) == 0 {
				// One long block: its beginning.
				blocks[h.i] = string([]rune(blocks[h.i])[:maxChars]) + "…"
				n = maxChars
			} else {
				continue
			}
		}
		chosen = append(chosen, h.i)
		shown += n
	}
	slices.Sort(chosen)
	var b strings.Builder
	prev := -1
	for _, i := range chosen {
		if prev >= 0 {
			b.WriteString("\n\n")
		}
		if i != prev+1 {
			b.WriteString("…\n\n")
		}
		b.WriteString(blocks[i])
		prev = i
	}
	if prev != len(blocks)-1 {
		b.WriteString("\n\n…")
	}
	return b.String(), shown, true
}

// stopWords are left out of a goal's terms.
var stopWords = map[string]bool{"the": true, "and": true, "for": true, "with": true, "what": true, "which": true, "that": true,
	"this": true, "from": true, "are": true, "was": true, "were": true, "how": true, "find": true, "about": true,
	"page": true, "all": true, "its": true, "their": true, "into": true, "when": true, "where": true, "who": true}

// goalTerms are the lower-cased words of s of three letters or more, but
// stop words; digits count as letters.
func goalTerms(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if utf8.RuneCountInString(w) >= 3 && !stopWords[w] {
			out[w] = true
		}
	}
	return out
}
