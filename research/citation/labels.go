package citation

import (
	"strconv"
	"strings"
)

// maxLabelGroup bounds the length of a bracket that may hold source labels,
// and maxLinkTarget the link target a model may have added to one.
const (
	maxLabelGroup = 256
	maxLinkTarget = 2048
)

// FromLabels converts a summary that cites its sources by label — S1 for
// sources[0], S2 for sources[1], … — into the marker form Gemini's
// grounding produces, " [label](short URL)", so that later steps see one
// format whatever the back end.
//
// A citation is a square bracket holding only labels, as the prompts ask:
// [S1], [S2, S5], [S2; S5], [S2 and S5], [S1-S3] (a range), and the
// full-width 【S1】 that models write in CJK text; [S1][S3] is two. Labels
// are case-insensitive. A bracket the model turned into a link, [S1](…),
// loses its link target. Labels naming no source are removed, and a bracket
// left with none is removed with the space before it. Anything else is
// ordinary text: a bare S1, a parenthesised (S2) (a model name, "the (S2)
// region"), and labels in code spans and code blocks. It returns the
// converted text and the sources cited, in order of first citation, each
// once.
func FromLabels(summary string, sources []Source) (string, []Source) {
	out := make([]byte, 0, len(summary)+64)
	var used []Source
	seen := map[int]bool{}
	code := codeRegions(summary)
	for i := 0; i < len(summary); {
		if len(code) > 0 && i == code[0].start {
			out = append(out, summary[i:code[0].end]...)
			i = code[0].end
			code = code[1:]
			continue
		}
		close, width, ok := labelGroup(summary, i)
		if !ok {
			out = append(out, summary[i])
			i++
			continue
		}
		nums := labelNumbers(summary[i+width : close])
		end := close + closerWidth(summary, close)
		if summary[i] == '[' && end < len(summary) && summary[end] == '(' {
			if j := strings.IndexAny(summary[end:min(len(summary), end+maxLinkTarget)], ")\n"); j > 0 && summary[end+j] == ')' {
				end += j + 1
			}
		}
		var markers []string
		inGroup := map[int]bool{}
		for _, n := range nums {
			if n < 1 || n > len(sources) || inGroup[n] {
				continue
			}
			src, ok := markerSource(sources[n-1])
			if !ok {
				continue
			}
			inGroup[n] = true
			markers = append(markers, Marker([]Source{src}))
			if !seen[n] {
				seen[n] = true
				used = append(used, sources[n-1])
			}
		}
		out = trimHSpace(out)
		if len(markers) == 0 {
			// Removed: keep one space between words.
			if end < len(summary) && !isSpaceOrClosing(summary[end]) && len(out) > 0 && !isSpaceOrClosing(out[len(out)-1]) {
				out = append(out, ' ')
			}
			i = end
			continue
		}
		m := strings.Join(markers, "")
		if len(out) == 0 || out[len(out)-1] == '\n' || out[len(out)-1] == '(' || out[len(out)-1] == '[' {
			m = m[1:]
		}
		out = append(out, m...)
		i = end
	}
	return string(out), used
}

// labelGroup reports whether a label bracket opens at s[i]: its closer's
// position and the opener's width.
func labelGroup(s string, i int) (int, int, bool) {
	var opener, closer string
	switch {
	case s[i] == '[':
		opener, closer = "[", "]"
	case strings.HasPrefix(s[i:], "【"):
		opener, closer = "【", "】"
	default:
		return 0, 0, false
	}
	rest := s[i+len(opener):]
	rest = rest[:min(len(rest), maxLabelGroup+len(closer))]
	j := strings.Index(rest, closer)
	if j <= 0 || j > maxLabelGroup || strings.ContainsAny(rest[:j], "[]()\n") {
		return 0, 0, false
	}
	if labelNumbers(rest[:j]) == nil {
		return 0, 0, false
	}
	return i + len(opener) + j, len(opener), true
}

func closerWidth(s string, close int) int {
	if strings.HasPrefix(s[close:], "】") {
		return len("】")
	}
	return 1
}

// labelNumbers parses a list of labels ("S1, S2-S4 and s7") into their
// numbers in order, ranges expanded (at most maxRange numbers each; numbers
// too large to be an index become 0). It returns nil unless every item is
// a label.
func labelNumbers(content string) []int {
	items := strings.FieldsFunc(content, func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '&'
	})
	var nums []int
	for _, it := range items {
		if strings.EqualFold(it, "and") {
			continue
		}
		lo, hi, ok := labelRange(it)
		if !ok {
			return nil
		}
		if lo > hi {
			lo, hi = hi, lo
		}
		for n := lo; n <= hi && n-lo < maxRange; n++ {
			nums = append(nums, n)
		}
	}
	return nums
}

// maxRange caps the expansion of one label range.
const maxRange = 100

// labelRange parses "S3" or "S3-S5" / "S3–5".
func labelRange(it string) (int, int, bool) {
	for _, dash := range []string{"-", "–", "—"} {
		if a, b, ok := strings.Cut(it, dash); ok {
			lo, ok1 := labelNumber(a, true)
			hi, ok2 := labelNumber(b, false)
			return lo, hi, ok1 && ok2
		}
	}
	n, ok := labelNumber(it, true)
	return n, n, ok
}

// labelNumber parses "S3" (or "3" when the S is optional).
func labelNumber(s string, needS bool) (int, bool) {
	if len(s) > 0 && (s[0] == 'S' || s[0] == 's') {
		s = s[1:]
	} else if needS {
		return 0, false
	}
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	if len(s) > 9 {
		return 0, true // a label, but no index
	}
	n, _ := strconv.Atoi(s)
	return n, true
}

// markerSource is s as a marker shows it: a safe label, and the short URL
// or else the URL as target.
func markerSource(s Source) (Source, bool) {
	target := s.ShortURL
	if target == "" {
		target = s.URL
	}
	if target == "" || strings.ContainsAny(target, " \t\r\n()<>") {
		return Source{}, false
	}
	label := cleanLabel(s.Label)
	if label == "" {
		label = hostLabel(s.Title, s.URL)
	}
	return Source{Label: label, ShortURL: target, URL: s.URL, Title: s.Title}, true
}

func trimHSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func isSpaceOrClosing(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || isClosing(c)
}
