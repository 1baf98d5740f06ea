package eval

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// Statement is a sentence of an answer, with the sources it cites.
type Statement struct {
	// Text is the sentence without its citation links.
	Text string `json:"text"`
	// Cites are the source numbers of its citations ([n](url)), in order,
	// once each; URLs are the links' URLs, in the same order.
	Cites []int    `json:"cites,omitempty"`
	URLs  []string `json:"urls,omitempty"`
}

// citationLink matches a numbered citation link [n](url).
var citationLink = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[(\d{1,4})\]\(([^()\s]+)\)`) })

// Statements splits an answer in Markdown into statements: each list item,
// table row and paragraph is split into sentences, and a citation link
// right after a sentence's end (". [1](url)") belongs to that sentence.
// Headings, code fences, horizontal rules and lines that are only links
// are not statements. Sentences of fewer than three words are not either
// ("See below:").
func Statements(answer string) []Statement {
	var out []Statement
	fence := false
	for _, line := range strings.Split(answer, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
			continue
		}
		if fence || t == "" || strings.HasPrefix(t, "#") || strings.Trim(t, "-*_= ") == "" || strings.HasPrefix(t, "|--") || strings.HasPrefix(t, "| --") {
			continue
		}
		t = strings.TrimLeft(t, ">")
		t = strings.TrimSpace(t)
		t = listMarker().ReplaceAllString(t, "")
		for _, s := range sentences(t) {
			if st, ok := statementOf(s); ok {
				out = append(out, st)
			}
		}
	}
	return out
}

// listMarker is a list item's marker: "- ", "* ", "1. ".
var listMarker = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:[-*+]|\d{1,3}[.)])\s+`) })

// sentences splits a line at sentence ends: ., ! or ? followed by space and
// not by a citation link, and not after a single letter or a common
// abbreviation (e.g., i.e., U.S.).
func sentences(line string) []string {
	var out []string
	start := 0
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		if rs[i] != '.' && rs[i] != '!' && rs[i] != '?' {
			continue
		}
		if i+1 < len(rs) && !unicode.IsSpace(rs[i+1]) {
			continue
		}
		// Citations right after the end belong to this sentence.
		j := i + 1
		for {
			k := j
			for k < len(rs) && unicode.IsSpace(rs[k]) {
				k++
			}
			loc := citationLink().FindStringIndex(string(rs[k:]))
			if loc == nil || loc[0] != 0 {
				break
			}
			j = k + len([]rune(string(rs[k:])[:loc[1]]))
		}
		if rs[i] == '.' && abbreviation(rs[:i]) {
			continue
		}
		out = append(out, string(rs[start:j]))
		start = j
		i = j - 1
	}
	if rest := strings.TrimSpace(string(rs[start:])); rest != "" {
		out = append(out, rest)
	}
	return out
}

// abbreviation reports whether the word before a '.' is one that does not
// end a sentence: a single letter (U.S., J.), e.g, i.e, etc, vs, Dr, Mr.
func abbreviation(before []rune) bool {
	k := len(before)
	for k > 0 && (unicode.IsLetter(before[k-1]) || before[k-1] == '.') {
		k--
	}
	w := strings.ToLower(strings.Trim(string(before[k:]), "."))
	if len([]rune(w)) == 1 {
		return true
	}
	switch w {
	case "e.g", "i.e", "etc", "vs", "dr", "mr", "mrs", "ms", "st", "no", "fig", "al", "approx", "ca":
		return true
	}
	return false
}

// statementOf takes the citations out of a sentence.
func statementOf(s string) (Statement, bool) {
	var st Statement
	seen := map[int]bool{}
	for _, m := range citationLink().FindAllStringSubmatch(s, -1) {
		n, _ := strconv.Atoi(m[1])
		if seen[n] {
			continue
		}
		seen[n] = true
		st.Cites = append(st.Cites, n)
		st.URLs = append(st.URLs, m[2])
	}
	text := s
	for citationLink().MatchString(text) { // links nested in links
		text = citationLink().ReplaceAllString(text, "")
	}
	text = strings.Join(strings.Fields(text), " ")
	text = strings.ReplaceAll(text, " .", ".")
	text = strings.ReplaceAll(text, " ,", ",")
	text = strings.Trim(text, "|")
	text = strings.TrimSpace(text)
	if len(strings.Fields(text)) < 3 {
		return Statement{}, false
	}
	st.Text = text
	return st, true
}
