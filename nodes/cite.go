package nodes

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/tools"
)

// Citing sources in agent answers.
//
// Tools that read the web (web_search, fetch_page, deep_research) return
// the pages their output came from (tools.Result.Sources). The agent gives
// each page a label when it first sees it — S1, S2, … in the order of the
// run, one per URL — and shows the labels after the tool's output, so the
// model can cite [S3]. The final answer is then checked like a research
// report: labels and links that name a gathered page become numbered
// citations [n](url), everything else that poses as a citation is removed
// and counted, and a numbered Sources list ends the answer.

// labelSources returns the sources of results not already among known,
// labelled in order, and the note that shows the model each result's
// labels (one per result; "" for a result without sources).
func labelSources(known []citation.Source, results []tools.Result) (added []citation.Source, notes []string) {
	// One label per page, whatever its spelling (search.PageKey).
	index := make(map[string]int, len(known))
	for i, s := range known {
		if _, ok := index[search.PageKey(s.URL)]; !ok {
			index[search.PageKey(s.URL)] = i
		}
	}
	all := known
	notes = make([]string, len(results))
	for r, res := range results {
		var parts []string
		for _, src := range res.Sources {
			u, ok := sourceURL(src.URL)
			if !ok {
				continue
			}
			i, seen := index[search.PageKey(u)]
			if !seen {
				i = len(all)
				index[search.PageKey(u)] = i
				s := citation.ForResult(cleanTitle(src.Title), u, 0, i+1)
				all = append(all, s)
				added = append(added, s)
			}
			part := fmt.Sprintf("[S%d] %s", i+1, all[i].URL)
			if t := all[i].Title; t != "" {
				part += " — " + t
			}
			if !slices.Contains(parts, part) {
				parts = append(parts, part)
			}
		}
		if len(parts) > 0 {
			notes[r] = "Sources in this result; cite them by label, e.g. [S" + strconv.Itoa(index[search.PageKey(firstURL(res))]+1) + "], right after the claims they support:\n" + strings.Join(parts, "\n")
		}
	}
	return added, notes
}

func firstURL(res tools.Result) string {
	for _, s := range res.Sources {
		if u, ok := sourceURL(s.URL); ok {
			return u
		}
	}
	return ""
}

// sourceURL accepts an absolute http(s) URL without spaces, which is all a
// citation can point to.
func sourceURL(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > 2048 || strings.ContainsAny(raw, " \t\r\n<>()[]") {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	return raw, true
}

// cleanTitle makes an untrusted page title fit for a one-line note and a
// Sources entry.
func cleanTitle(t string) string {
	t = strings.Join(strings.Fields(t), " ")
	t = strings.NewReplacer("[", "(", "]", ")", "<", "‹", ">", "›").Replace(t)
	if utf8.RuneCountInString(t) > 120 {
		t = string([]rune(t)[:120]) + "…"
	}
	return t
}

// inlineLink matches an inline Markdown link, [text](target) or
// [text](target "title"); proseLinks skips images. It is compiled on first
// use: the {1,500} bound makes a large program (about 280 KB and 1,600
// allocations), which every start of a program importing nodes paid for
// as package init, whether or not it ever wrote an answer.
var inlineLink = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\[([^\[\]\n]{1,500})\]\(\s*<?([^\s()<>]+)>?(?:\s+"[^"\n]*")?\s*\)`)
})

// citationText is link text that is itself a citation: 3, S3, ^3.
var citationText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\^?[Ss]?\d{1,4}\s*$`) })

// proseLinks rewrites the inline links of an answer written as prose so
// that checking its citations keeps their words: a link to a gathered page
// becomes its text followed by a citation of the page; a link to a page
// not gathered in the run loses its target (counted in the second result);
// a link to something that is not a web page, such as a file the agent
// wrote, becomes its text and its target in code. Links whose text is only
// a citation number, and images, are left to the citation check.
func proseLinks(answer string, gathered []citation.Source) (string, int) {
	byURL := make(map[string]citation.Source, 2*len(gathered))
	for _, s := range gathered {
		if _, ok := byURL[search.PageKey(s.URL)]; !ok {
			byURL[search.PageKey(s.URL)] = s
		}
		if s.ShortURL != "" {
			byURL[s.ShortURL] = s
		}
	}
	var b strings.Builder
	dropped, last := 0, 0
	for _, m := range inlineLink().FindAllStringSubmatchIndex(answer, -1) {
		if m[0] > 0 && (answer[m[0]-1] == '!' || answer[m[0]-1] == '\\') {
			continue
		}
		text, target := strings.TrimSpace(answer[m[2]:m[3]]), answer[m[4]:m[5]]
		if citationText().MatchString(text) {
			continue
		}
		b.WriteString(answer[last:m[0]])
		last = m[1]
		s, ok := byURL[target]
		if !ok {
			s, ok = byURL[search.PageKey(target)]
		}
		if ok {
			b.WriteString(text + citation.Marker([]citation.Source{s}))
			continue
		}
		if u, err := url.Parse(target); err == nil && u.Scheme != "" {
			dropped++
			b.WriteString(text)
			continue
		}
		code := "`" + strings.ReplaceAll(target, "`", "") + "`"
		if text == target {
			b.WriteString(code)
		} else {
			b.WriteString(text + " (" + code + ")")
		}
	}
	b.WriteString(answer[last:])
	return b.String(), dropped
}

// citeAnswer checks the citations of a final answer against the sources
// gathered in the run: it returns the answer with numbered citations
// [n](url) and a Sources list, the cited sources in number order, and how
// many citations were removed because they named nothing gathered.
func citeAnswer(answer string, gathered []citation.Source) (string, []citation.Source, int) {
	if strings.TrimSpace(answer) == "" {
		return answer, nil, 0
	}
	text, dropped := normalizeCitations(answer, len(gathered))
	text, linkDropped := proseLinks(text, gathered)
	dropped += linkDropped + inventedLabels(text, len(gathered))
	text, _ = citation.FromLabels(text, gathered)
	res := citation.Finalize(text, gathered)
	out := strings.TrimRight(res.Text, " \n")
	if list := citation.SourcesList(res.Sources); list != "" {
		out += "\n\n" + list
	}
	return out, res.Sources, res.Dropped + dropped
}

var (
	// labelGroup finds citations in the syntax the model is told to write
	// (and citation.FromLabels converts): [S3], [S1, S3], 【S3】. "(S3)" or
	// "S3" in prose are words.
	labelGroup = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`[\[【]\s*[Ss]\d{1,6}(?:\s*[,;]\s*[Ss]\d{1,6})*\s*[\]】]`)
	})
	labelRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[Ss](\d{1,6})`) })
	// codeText is inline code and fenced blocks, where nothing is a citation.
	codeText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("(?s)```.*?(?:```|$)|~~~.*?(?:~~~|$)|`[^`\n]*`") })
)

// inventedLabels counts the cited labels that name no source (S9 when
// there are three).
func inventedLabels(text string, n int) int {
	count := 0
	for _, g := range labelGroup().FindAllString(codeText().ReplaceAllString(text, ""), -1) {
		for _, m := range labelRef().FindAllStringSubmatch(g, -1) {
			if k, err := strconv.Atoi(m[1]); err == nil && (k < 1 || k > n) {
				count++
			}
		}
	}
	return count
}
