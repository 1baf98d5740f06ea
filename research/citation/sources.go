package citation

import (
	"regexp"
	"strings"
	"sync"
)

// A model often ends its answer with its own list of sources — "Sources:",
// "**References**", "## Sources" and links — which the answer's own list
// (SourcesList, numbered as the citations are) would then follow. Finalize
// drops such a list once, before it reads the answer: the citations that
// count are those in the text.

// The heading expression matches a line that opens a list of sources: a heading of
// any level, a bold or italic line, or a line ending in ':', saying
// Sources, References, Citations, Bibliography or Works cited (also in a
// few other languages). The line expression is such a line with the list after its
// ':' ("Sources: [1](…), [2](…)").
//
// The expressions are compiled on first use, not as package init: their
// case-folded alternations cost every start of a program importing this
// package (the research binary's "research version" included) about
// 135 KB and 600 allocations.
var sourcesExprs = sync.OnceValue(func() sourcesRE {
	return sourcesRE{
		heading: regexp.MustCompile(`(?i)^ {0,3}(?:#{1,6}[ \t]+)?[*_]{0,3}` + sourcesWords + `[ \t]*:?[ \t]*[*_]{0,3}[ \t]*:?[ \t]*#*[ \t]*$`),
		line:    regexp.MustCompile(`(?i)^ {0,3}[*_]{0,3}` + sourcesWords + `[ \t]*(?:[*_]{0,3}:|:[*_]{0,3})[ \t]*(.+)$`),
		item:    regexp.MustCompile(`(?i)\]\(|://|www\.|vertexaisearch\.cloud\.google\.com/id/|\[\^?s?\d{1,6}\]`),
	}
})

// sourcesRE are the compiled expressions of a sources list: heading, line
// and item (what a line of such a list holds: a link, a URL, a short URL's
// host path, or a citation label).
type sourcesRE struct{ heading, line, item *regexp.Regexp }

const sourcesWords = `(?:sources|references|citations|bibliography|works cited|sources cited|sources used|quellen|referenzen|literatur|fuentes|referencias|références|fonti|bronnen|出典|参考文献|来源|参考资料|资料来源)`

// splitSourcesList splits a trailing list of sources off text: it returns
// the text before it (trailing blank lines and a rule before the heading
// go too) and the list, or text and "" when text does not end with one.
// Every non-blank line after the heading must name a source (the item
// expression).
func splitSourcesList(text string) (string, string) {
	if !strings.Contains(text, "\n") {
		return text, ""
	}
	lines := strings.SplitAfter(text, "\n")
	items := 0
	for i := len(lines) - 1; i >= 1; i-- {
		line := strings.TrimRight(lines[i], "\r\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		re := sourcesExprs()
		heading := len(line) < 200 && re.heading.MatchString(line)
		if m := re.line.FindStringSubmatch(line); !heading && m != nil && len(line) < 4096 && re.item.MatchString(m[1]) {
			heading = true
			items++
		}
		if heading {
			if items == 0 {
				return text, ""
			}
			start := 0
			for _, l := range lines[:i] {
				start += len(l)
			}
			if inCode(text, start) {
				return text, ""
			}
			body := strings.TrimRight(text[:start], " \t\r\n")
			if k := strings.LastIndexByte(body, '\n'); isRule(body[k+1:]) {
				body = strings.TrimRight(body[:k+1], " \t\r\n")
			}
			if strings.TrimSpace(body) == "" {
				return text, ""
			}
			return body, text[start:]
		}
		if !sourcesExprs().item.MatchString(line) {
			return text, ""
		}
		items++
	}
	return text, ""
}

// isRule reports whether a line is a thematic break (---, ***, ___).
func isRule(line string) bool {
	t := strings.ReplaceAll(strings.TrimSpace(line), " ", "")
	if len(t) < 3 {
		return false
	}
	for _, c := range []string{"-", "*", "_"} {
		if strings.Trim(t, c) == "" {
			return true
		}
	}
	return false
}

// inCode reports whether position i of text is inside a code block.
func inCode(text string, i int) bool {
	for _, c := range codeBlocks(text) {
		if c.start <= i && i < c.end {
			return true
		}
	}
	return false
}
