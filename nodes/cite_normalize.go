package nodes

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// One citation scheme. The model is told to cite [S3]; models also write
// the schemes they know: a bare "[3]", a footnote "[^3]", "[source 3]",
// "(S3)", and a list of sources of their own at the end. normalizeCitations
// turns each of those into the [S3] label when it names a gathered source
// unambiguously (a number from 1 to the count of sources gathered: the
// tools show S-labels only, so a number can mean nothing else), and
// otherwise removes it and counts it — but "(S9)" naming nothing is left
// as prose (a phone, a model). The model's own Sources list is left to
// citation.Finalize, which drops it (the real one is made from the
// citations). Where a citation is removed,
// the prose around it is tidied, so that "see [7], [8] and [9]." does not
// become "see , and .".

var (
	// altCitation matches a citation group in one of the other schemes:
	// [3], [3, 4], [^3], [source 3], [Sources 3, 4], (S3), (S3, S4), and
	// [S3] (a label that may name nothing gathered).
	altCitation = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\[\^(\d{1,4})\]|\[(?i:sources?\s*)?((?:[Ss]?\d{1,4})(?:\s*[,;]\s*[Ss]?\d{1,4})*)\]|\(((?:[Ss]\d{1,4})(?:\s*[,;]\s*[Ss]\d{1,4})*)\)`)
	})
	altNumber = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\d{1,4}`) })
	// footnoteDef is a footnote definition line, "[^3]: …".
	footnoteDef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^[ \t]*\[\^\d{1,4}\]:.*(?:\n|$)`) })
	// sourcesHeading is the heading of a model-written list of sources.
	sourcesHeading = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?im)^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?[ \t]*(?:sources|references|bibliography|citations|works cited|quellen)[ \t]*:?[ \t]*(?:\*\*|__)?[ \t]*:?[ \t]*$`)
	})
	// listLine is a line of such a list: an item, a link, a label, or blank.
	listLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[ \t]*(?:$|[-*+•][ \t]|\d{1,4}[.)][ \t]|\[|https?://)`)
	})
)

// removed marks where a citation was taken out, for tidyProse.
const removed = "\x00"

// normalizeCitations rewrites the citations of answer in other schemes as
// S-labels of the n gathered sources, removes those naming none (counted
// in the second result), and tidies the prose where it removed something. Code is left alone.
func normalizeCitations(answer string, n int) (string, int) {
	// The model's own list is left to citation.Finalize, which drops it
	// and counts what in it names nothing gathered.
	at := sourcesListStart(answer)
	body, list := answer[:at], answer[at:]
	text, dropped := normalizeBody(body, n)
	return text + list, dropped
}

func normalizeBody(answer string, n int) (string, int) {
	dropped := 0
	var b strings.Builder
	last := 0
	codes := codeText().FindAllStringIndex(answer, -1)
	inCode := func(i int) bool {
		for _, c := range codes {
			if i >= c[0] && i < c[1] {
				return true
			}
		}
		return false
	}
	answer = footnoteDef().ReplaceAllStringFunc(answer, func(string) string { return "" })
	codes = codeText().FindAllStringIndex(answer, -1)
	for _, m := range altCitation().FindAllStringSubmatchIndex(answer, -1) {
		start, end := m[0], m[1]
		if inCode(start) {
			continue
		}
		// A link's text ([3](url)) and a reference definition ([3]: url)
		// are the citation check's; x[3] is an index, not a citation.
		if end < len(answer) && (answer[end] == '(' || answer[end] == ':') && answer[start] == '[' {
			continue
		}
		if start > 0 && answer[start] == '[' && answer[start+1] != '^' && isWordByte(answer[start-1]) {
			continue
		}
		group := answer[start:end]
		var labels []string
		bad := 0
		for _, num := range altNumber().FindAllString(group, -1) {
			k, _ := strconv.Atoi(num)
			if k >= 1 && k <= n {
				labels = append(labels, "S"+strconv.Itoa(k))
			} else {
				bad++
			}
		}
		if bad > 0 && answer[start] == '(' {
			continue // "the Galaxy (S9)": a word, unless it names a source
		}
		b.WriteString(answer[last:start])
		last = end
		dropped += bad
		if len(labels) == 0 {
			b.WriteString(removed)
			continue
		}
		b.WriteString("[" + strings.Join(labels, ", ") + "]")
	}
	b.WriteString(answer[last:])
	out := b.String()
	if strings.Contains(out, removed) {
		out = tidyProse(out)
	}
	return out, dropped
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// sourcesListStart is where a list of sources the model wrote at the end
// of its answer begins (a Sources, References, … heading followed only by
// list items, links and blank lines), or len(answer).
func sourcesListStart(answer string) int {
	locs := sourcesHeading().FindAllStringIndex(answer, -1)
	if len(locs) == 0 {
		return len(answer)
	}
	start := locs[len(locs)-1][0]
	for _, line := range strings.Split(answer[locs[len(locs)-1][1]:], "\n") {
		if !listLine().MatchString(line) {
			return len(answer)
		}
	}
	return start
}

var (
	// tidy rules, applied around removed citations only.
	reAroundRemoved = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[ \t]*\x00[ \t]*`) })
	reRepeatedJoin  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\b(and|or)\b(?:[ \t]*,?[ \t]*\b(?:and|or)\b)+`) })
	reCommaRun      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`,(?:[ \t]*,)+`) })
	reDanglingJoin  = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(?:[ \t]*,)?[ \t]+(?:and|or)[ \t]*([.;:!?)]|$)|[ \t]*,[ \t]*([.;:!?)]|$)`)
	})
	reSpaceBefore = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[ \t]+([.,;:!?)])`) })
	reEmptyParens = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\([ \t,;]*\)|\[[ \t,;]*\]`) })
	reDoubleSpace = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[ \t]{2,}`) })
)

// tidyProse mends the sentences where citations were removed (marked with
// removed): the connectors and commas they leave behind, "and and",
// ", ,", "see ." and empty brackets.
func tidyProse(s string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		if !strings.Contains(line, removed) {
			continue
		}
		line = reAroundRemoved().ReplaceAllString(line, " ")
		line = reEmptyParens().ReplaceAllString(line, "")
		line = reCommaRun().ReplaceAllString(line, ",")
		line = reRepeatedJoin().ReplaceAllString(line, "$1")
		line = reDanglingJoin().ReplaceAllString(line, "$1$2")
		line = reSpaceBefore().ReplaceAllString(line, "$1")
		line = reDoubleSpace().ReplaceAllString(line, " ")
		lines[i] = strings.TrimRight(line, " \t")
	}
	return strings.Join(lines, "\n")
}
