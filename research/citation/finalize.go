package citation

import (
	"html"
	"math"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/deepgraph/deepgraph/search"
)

// Result is a final answer with its citations restored.
type Result struct {
	// Text is the answer with every kept citation written as [n](url).
	Text string `json:"text"`
	// Sources are the cited sources in number order: Sources[i] is
	// citation number i+1. Each page appears once.
	Sources []Source `json:"sources"`
	// Dropped counts the citations removed because they pointed to nothing
	// gathered: invented short URLs, or links to pages not found in this run.
	Dropped int `json:"dropped"`
}

// maxPasses bounds the passes of Finalize. Inputs built to need more than
// two or three do not turn up even under fuzzing; past the bound, defang
// makes the text safe anyway.
const maxPasses = 8

// Finalize restores the real URLs in a final answer and numbers its
// citations.
//
// It recognises, anywhere in the answer:
//   - inline links and images, [label](target) and ![alt](target), also
//     with a <target> or a "title", and with several targets separated by
//     commas, semicolons or spaces: [a](short1, short2);
//   - reference-style links [label][ref], [ref][] and [ref], and footnotes
//     [^ref], whose definition lines ([ref]: target, [^ref]: target or
//     [^ref]: [label](target)) are removed from the text;
//   - autolinks <scheme:…>;
//   - bare short-URL tokens (any run of non-space text containing
//     vertexaisearch.cloud.google.com/id/), also several in one bracket:
//     [short1, short2] or (short1; short2).
//
// A target that is exactly a gathered source's short URL (compared as a
// whole token, so …/id/1-1 never matches inside …/id/1-10), or any spelling
// of its page (search.PageKey), maps to that source. Every other link or
// token is removed with the whitespace, separators and conjunctions it
// leaves behind, and counted in Dropped. Kept citations are numbered by
// first appearance, one number per page (the first gathered, shown under
// its first https URL), written as [n](url); consecutive identical
// citations collapse into one.
//
// Gathered sources whose URL is not an absolute http, https or file URL,
// or is itself a short URL, cannot be restored: citations of them are
// dropped. When two sources share a short URL, the first gathered wins.
//
// A link written as prose keeps its text: "See [the spec](…) for details"
// becomes "See the spec [1](…) for details", or "See the spec for details"
// when the page was not gathered; a citation marker (a short URL, a
// number, the page's own label, an image) becomes [n](url) or goes whole.
// Every other bare URL outside code is a gathered source's citation or is
// replaced by its host in a code span, counted in Dropped (see bareurl.go).
// Code spans and code blocks are left as they are (see code.go). A list of
// sources the model wrote at the end is dropped (sources.go). Last, the
// guard makes inert anything a CommonMark + GFM renderer would still link
// to a page not gathered (guard.go), counting each in Dropped. The work is
// linear in the length of the answer.
func Finalize(answer string, gathered []Source) Result {
	return finalize(answer, gathered, maxPasses)
}

func finalize(answer string, gathered []Source, passes int) Result {
	if answer == "" {
		return Result{}
	}
	ix := newIndex(gathered)
	body, list := splitSourcesList(answer)
	r := ix.run(body, passes)
	if list != "" {
		// The model's own list goes; what in it named nothing gathered
		// counts as dropped.
		r.Dropped += ix.run(list, passes).Dropped
	}
	for range maxGuardRounds {
		text, made := ix.guard(r.Text)
		if made == 0 {
			return r
		}
		dropped := r.Dropped + made
		r = ix.run(text, passes)
		r.Dropped += dropped
	}
	// Only adversarial input gets here: make everything but the citations
	// inert, and number those again.
	d := newDoc(r.Text)
	dropped := r.Dropped + 1
	r = finalizePass(inert(d, ix, 0, len(r.Text)), ix)
	r.Dropped += dropped
	return r
}

// run repeats passes over text until it is a fixed point.
func (ix *index) run(text string, passes int) Result {
	dropped := 0
	for range passes {
		// Removing a link can join the text around it into a new link or
		// token ("[a" + "](b)"), so passes repeat until nothing changes;
		// a pass over its own output changes nothing.
		r := finalizePass(text, ix)
		dropped += r.Dropped
		if r.Text == text {
			r.Dropped = dropped
			return r
		}
		text = r.Text
	}
	// Only adversarial input gets here: strip what could still be a link
	// or a short URL around the citations already written.
	text, n := defang(text, ix)
	r := finalizePass(text, ix)
	r.Dropped += dropped + n
	return r
}

// defang keeps the citations Finalize wrote, [n](url), and removes from the
// text between them every bracket, angle bracket and short-URL host path.
// That text can then hold no link and no short URL, and it cannot join a
// citation into one. It returns the text and how many host paths went.
func defang(s string, ix *index) (string, int) {
	var b strings.Builder
	n, from := 0, 0
	clean := func(seg string) {
		kept := make([]byte, 0, len(seg))
		for k := 0; k < len(seg); k++ {
			switch seg[k] {
			case '[', ']', '<', '>':
			default:
				kept = append(kept, seg[k])
			}
		}
		// Remove every short-URL host path, in one pass: removing one can
		// join the text around it into another, so the check goes on from
		// what is already written.
		out := make([]byte, 0, len(kept))
		for _, c := range kept {
			out = append(out, c)
			if len(out) >= len(shortHostPath) && hasSuffixFold(out, shortHostPath) {
				out = out[:len(out)-len(shortHostPath)]
				n++
			}
		}
		b.Write(out)
	}
	d := newDoc(s)
	for i := 0; i < len(s); i++ {
		if s[i] != '[' {
			continue
		}
		if end, ok := ix.citationAt(d, i); ok {
			clean(s[from:i])
			b.WriteString(s[i:end])
			from, i = end, end-1
		}
	}
	clean(s[from:])
	return b.String(), n
}

// citationAt reports whether s[i:] starts with a citation as Finalize
// writes it, [n](rendered URL of a gathered source), and where it ends.
func (ix *index) citationAt(d *doc, i int) (int, bool) {
	s := d.s
	j := i + 1
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == i+1 || !strings.HasPrefix(s[j:], "](") {
		return 0, false
	}
	targets, end, ok := inlineTargets(d, j+1)
	if !ok || len(targets) != 1 || end != j+2+len(targets[0])+1 {
		return 0, false
	}
	id, ok := ix.lookup(targets[0])
	return end, ok && ix.links[id] == targets[0]
}

// index finds gathered sources by short URL and by page: the URLs of one
// page under different spellings (search.PageKey) are one source.
type index struct {
	sources []Source       // one per page, as first gathered, with the URL shown
	links   []string       // renderURL of each source's URL
	byShort map[string]int // canonical short URL → sources index
	byURL   map[string]int // page key of a URL or redirect → sources index
	labels  [][]string     // the labels each source was gathered under
}

func newIndex(gathered []Source) *index {
	n := len(gathered)
	ix := &index{byShort: make(map[string]int, n), byURL: make(map[string]int, n),
		sources: make([]Source, 0, n), links: make([]string, 0, n), labels: make([][]string, 0, n)}
	for _, s := range gathered {
		if !restorable(s.URL) {
			continue
		}
		key := search.PageKey(s.URL)
		id, ok := ix.byURL[key]
		if !ok {
			id = len(ix.sources)
			ix.sources = append(ix.sources, s)
			ix.links = append(ix.links, renderURL(s.URL))
			ix.labels = append(ix.labels, nil)
			ix.byURL[key] = id
		} else if shown := ix.sources[id].URL; !isHTTPS(shown) && isHTTPS(s.URL) {
			// The page is shown under a URL the reader gathered: the first
			// seen, or the first https one.
			ix.sources[id].URL = s.URL
			ix.links[id] = renderURL(s.URL)
		}
		if l := cleanLabel(s.Label); l != "" {
			ix.labels[id] = append(ix.labels[id], l)
		}
		for _, r := range s.Redirects {
			if k := search.PageKey(r); restorable(r) {
				if _, taken := ix.byURL[k]; !taken {
					ix.byURL[k] = id
				}
			}
		}
		if s.ShortURL == "" {
			continue
		}
		short := s.ShortURL
		if c, ok := canonicalShort(s.ShortURL); ok {
			short = c
		}
		if _, taken := ix.byShort[short]; !taken {
			ix.byShort[short] = id
		}
	}
	return ix
}

func isHTTPS(u string) bool { return hasPrefixFold(u, "https://") }

// lookup maps a link target to a source index.
func (ix *index) lookup(target string) (int, bool) {
	target = strings.TrimSpace(target)
	if c, ok := canonicalShort(target); ok {
		id, found := ix.byShort[c]
		return id, found
	}
	if indexFold(target, shortHostPath) >= 0 {
		return 0, false // a malformed short URL is never a real one
	}
	if !restorable(target) {
		id, ok := ix.byShort[target] // a gathered short URL of another form
		return id, ok
	}
	if id, ok := ix.byURL[search.PageKey(target)]; ok {
		return id, true
	}
	id, ok := ix.byShort[target]
	return id, ok
}

// restorable reports whether a gathered URL may appear in the answer.
func restorable(raw string) bool {
	if raw == "" || indexFold(raw, shortHostPath) >= 0 {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return u.Host != ""
	case "file":
		return true
	}
	return false
}

// canonicalShort returns ShortURLPrefix + id when s is exactly a short URL:
// an optional http:// or https:// scheme, the host path (ASCII case
// ignored), and an id of letters, digits, '-' and '_'.
func canonicalShort(s string) (string, bool) {
	rest := s
	for _, scheme := range []string{"https://", "http://"} {
		if hasPrefixFold(rest, scheme) {
			rest = rest[len(scheme):]
			break
		}
	}
	if !hasPrefixFold(rest, shortHostPath) {
		return "", false
	}
	id := rest[len(shortHostPath):]
	if id == "" {
		return "", false
	}
	for i := 0; i < len(id); i++ {
		if !isIDByte(id[i]) {
			return "", false
		}
	}
	return ShortURLPrefix + id, true
}

func isIDByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_'
}

// renderURL writes a URL so it can be a Markdown link destination: spaces,
// control characters, angle brackets, backslashes and backticks are
// percent-encoded, and so are parentheses unless they are balanced.
func renderURL(u string) string {
	balanced, depth := true, 0
	for i := 0; i < len(u) && balanced; i++ {
		switch u[i] {
		case '(':
			depth++
		case ')':
			depth--
			balanced = depth >= 0
		}
	}
	balanced = balanced && depth == 0
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch {
		case c <= ' ' || c == 0x7f || c == '<' || c == '>' || c == '\\' || c == '`' || (!balanced && (c == '(' || c == ')')):
			b.WriteByte('%')
			b.WriteByte("0123456789ABCDEF"[c>>4])
			b.WriteByte("0123456789ABCDEF"[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// pass is the state of one pass of Finalize over a text.
type pass struct {
	ix      *index
	src     string
	doc     *doc      // src, for looking ahead
	closeOf closers   // '[' position → matching ']' position
	code    []span    // the code regions not yet reached, in order
	anchors []anchor  // removed links whose text is being kept
	urls    urlFinder // the bare URLs of src, found as the scan goes
	defs    map[string]*definition
	out     []byte
	number  map[int]int // source index → citation number
	cited   []Source
	dropped int
	// lastID and lastEnd are the source and out length of the last citation
	// written, to collapse repeats.
	lastID, lastEnd int
	// lastCut is the out length right after the last removal, or -1.
	lastCut int
}

// anchor is a removed link whose text stays: when the scan reaches close,
// it goes on at end, and tidies up if the text was empty.
type anchor struct {
	close, end, outLen int
	cite               []string // the targets to cite after the text
}

// definition is a reference or footnote definition line.
type definition struct {
	targets []string
	used    bool
}

func finalizePass(text string, ix *index) Result {
	p := &pass{ix: ix, number: map[int]int{}, lastID: -1, lastCut: -1}
	p.src = p.takeDefinitions(text)
	p.doc = newDoc(p.src)
	code := codeRegions(p.src)
	p.code = code
	p.closeOf = matchBrackets(p.src, code)
	p.out = make([]byte, 0, len(p.src))
	p.scan()
	for _, d := range p.defs {
		if d.used {
			continue
		}
		for _, t := range d.targets {
			if _, ok := ix.lookup(t); !ok {
				p.dropped++
			}
		}
	}
	return Result{Text: string(p.out), Sources: p.cited, Dropped: p.dropped}
}

// takeDefinitions removes reference and footnote definition lines and
// records them. As in CommonMark, the first definition of a label is the
// one that counts; a later one is removed too, and its targets that name
// nothing gathered count as dropped.
func (p *pass) takeDefinitions(text string) string {
	if !strings.Contains(text, "]:") {
		return text
	}
	var b strings.Builder
	blocks, at := codeBlocks(text), 0
	for line := range strings.SplitAfterSeq(text, "\n") {
		start := at
		at += len(line)
		for len(blocks) > 0 && blocks[0].end <= start {
			blocks = blocks[1:]
		}
		if len(blocks) > 0 && blocks[0].start <= start {
			b.WriteString(line) // in a code block
			continue
		}
		label, targets, ok := parseDefinition(line)
		if !ok {
			b.WriteString(line)
			continue
		}
		if p.defs == nil {
			p.defs = map[string]*definition{}
		}
		key := refKey(label)
		if _, dup := p.defs[key]; !dup {
			p.defs[key] = &definition{targets: targets}
			continue
		}
		for _, t := range targets {
			if _, ok := p.ix.lookup(t); !ok {
				p.dropped++
			}
		}
	}
	return b.String()
}

// parseDefinition parses "[label]: rest" (up to three leading spaces) and
// returns its targets: the URL-like words of rest (several for a footnote
// or a list of short URLs), or else, when rest is a CommonMark link
// destination with at most a title after it, that destination as a
// renderer decodes it — "//host/x", "https:host" and "https&#58;//…"
// included.
func parseDefinition(line string) (string, []string, bool) {
	s := strings.TrimRight(line, "\r\n")
	indent := len(s) - len(strings.TrimLeft(s, " "))
	s = s[indent:]
	if indent > 3 || !strings.HasPrefix(s, "[") {
		return "", nil, false
	}
	end := strings.Index(s, "]:")
	if end < 2 {
		return "", nil, false
	}
	label := s[1:end]
	if strings.ContainsAny(label, "[]") {
		return "", nil, false
	}
	rest := s[end+2:]
	var targets []string
	for _, f := range strings.FieldsFunc(rest, isListSep) {
		if i := strings.Index(f, "]("); i >= 0 {
			f = strings.TrimSuffix(f[i+2:], ")")
		}
		f = strings.TrimRight(strings.Trim(f, "<>()"), ".!?")
		if urlLike(f) {
			targets = append(targets, f)
		}
	}
	if len(targets) > 0 {
		return label, targets, true
	}
	if dest, ok := definitionDest(rest); ok && !strings.HasPrefix(label, "^") {
		return label, []string{dest}, true
	}
	return "", nil, false
}

// definitionDest returns the destination of a reference definition's
// rest of line — <dest> or a run without spaces, then nothing or a quoted
// or parenthesised title — decoded as a renderer decodes it.
func definitionDest(rest string) (string, bool) {
	rest = strings.TrimSpace(rest)
	var dest, after string
	if strings.HasPrefix(rest, "<") {
		k := strings.IndexByte(rest, '>')
		if k < 0 {
			return "", false
		}
		dest, after = rest[1:k], rest[k+1:]
	} else {
		k := strings.IndexAny(rest, " \t")
		if k < 0 {
			k = len(rest)
		}
		dest, after = rest[:k], rest[k:]
	}
	after = strings.TrimSpace(after)
	if dest == "" || (after != "" && !strings.ContainsRune("\"'(", rune(after[0]))) {
		return "", false
	}
	return html.UnescapeString(unescapePunct(dest)), true
}

func refKey(label string) string {
	return strings.ToLower(strings.Join(strings.Fields(label), " "))
}

// closers maps the position of each '[' that has a partner to the
// position of its ']' (stored +1, so that 0 is "none"): an array as long as
// the text, which is linear to build and O(1) to ask.
type closers struct{ to []int32 }

func (c *closers) set(open, close int) { c.to[open] = int32(close + 1) }

func (c *closers) get(open int) (int, bool) {
	if open >= len(c.to) || c.to[open] == 0 {
		return 0, false
	}
	return int(c.to[open]) - 1, true
}

// matchBrackets pairs square brackets, paragraph by paragraph; brackets in
// code do not count.
func matchBrackets(s string, code []span) closers {
	if len(s) > math.MaxInt32-1 || strings.IndexByte(s, '[') < 0 {
		return closers{} // nothing to pair (or 2 GB of text, left as it is)
	}
	m := closers{to: make([]int32, len(s))}
	var stack []int
	for i := 0; i < len(s); i++ {
		if len(code) > 0 && i == code[0].start {
			i = code[0].end - 1
			code = code[1:]
			continue
		}
		switch s[i] {
		case '[':
			stack = append(stack, i)
		case ']':
			if n := len(stack); n > 0 {
				m.set(stack[n-1], i)
				stack = stack[:n-1]
			}
		case '\n':
			if blankLineFollows(s, i) {
				stack = stack[:0]
			}
		}
	}
	return m
}

func blankLineFollows(s string, i int) bool {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case ' ', '\t', '\r':
		case '\n':
			return true
		default:
			return false
		}
	}
	return false
}

func (p *pass) scan() {
	s := p.src
	for i := 0; i < len(s); {
		if n := len(p.anchors); n > 0 && i >= p.anchors[n-1].close {
			a := p.anchors[n-1]
			p.anchors = p.anchors[:n-1]
			if i == a.close {
				i = a.end
				switch {
				case len(a.cite) > 0:
					// A prose link to a gathered page: its text, then the
					// page's citation.
					if n := len(p.out); n > a.outLen && p.out[n-1] != ' ' && p.out[n-1] != '\n' {
						p.out = append(p.out, ' ')
					}
					i = p.cite(i, a.cite)
				case len(p.out) == a.outLen:
					i = p.tidy(i) // the text was empty
				}
			}
			continue
		}
		for len(p.code) > 0 && p.code[0].start < i {
			p.code = p.code[1:]
		}
		if len(p.code) > 0 && p.code[0].start == i {
			end := p.code[0].end
			p.out = append(p.out, s[i:end]...)
			i = end
			continue
		}
		c := s[i]
		switch {
		case c == '!' && i+1 < len(s) && s[i+1] == '[':
			if j, ok := p.bracket(i, i+1); ok {
				i = j
				continue
			}
			p.out = append(p.out, c)
			i++
		case c == '[':
			if j, ok := p.bracket(i, i); ok {
				i = j
				continue
			}
			p.out = append(p.out, c)
			i++
		case c == '(':
			if j, ok := p.parenGroup(i); ok {
				i = j
				continue
			}
			p.out = append(p.out, c)
			i++
		case c == '<':
			if j, ok := p.autolink(i); ok {
				i = j
				continue
			}
			p.out = append(p.out, c)
			i++
		case isDelim(c):
			p.out = append(p.out, c)
			i++
		default:
			i = p.word(i)
		}
	}
}

// isDelim reports whether c ends a word (a possible bare URL).
func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '\v', '[', ']', '(', ')', '<', '>', '"', '\'', '`', '!':
		return true
	}
	return false
}

// word handles the run of non-delimiters at i: plain text with the bare
// URLs in it (see bareURL).
func (p *pass) word(i int) int {
	s := p.src
	j := i
	for j < len(s) && !isDelim(s[j]) {
		j++
	}
	for i < j {
		start, end, ok := p.urls.next(s, i)
		if !ok || start >= j {
			break
		}
		p.out = append(p.out, s[i:start]...)
		i = p.bareURL(start, end) // past j when the URL holds parentheses
	}
	if i < j {
		p.out = append(p.out, s[i:j]...)
		i = j
	}
	return i
}

// bracket handles a '[' at open (start is open, or the '!' of an image):
// an inline link, a reference, a footnote, or a bracketed group of short
// URLs. It reports false when it is none of them.
func (p *pass) bracket(start, open int) (int, bool) {
	s := p.src
	close, ok := p.closeOf.get(open)
	if !ok {
		return 0, false
	}
	label := s[open+1 : close]
	after := close + 1
	if after < len(s) && s[after] == '(' {
		if targets, end, ok := inlineTargets(p.doc, after); ok {
			return p.link(start, open, close, end, targets), true
		}
	}
	if p.defs != nil && close-open <= maxRefLabel {
		ref, end := "", after
		if after < len(s) && s[after] == '[' {
			if c2, ok := p.closeOf.get(after); ok {
				ref, end = s[after+1:c2], c2+1
				if strings.TrimSpace(ref) == "" {
					ref = label
				}
			}
		} else {
			ref = label
		}
		if d, ok := p.defs[refKey(ref)]; ok && ref != "" && len(ref) <= maxRefLabel {
			d.used = true
			return p.link(start, open, close, end, d.targets), true
		}
	}
	if start == open && close-open <= maxGroup && p.doc.index(open+1, "[]\n") == close {
		if targets, ok := groupTargets(label); ok {
			return p.cite(after, targets), true
		}
	}
	return 0, false
}

// maxGroup bounds the length of a bracket of several short URLs, and
// maxParenDepth the parentheses nested in a link destination (CommonMark
// allows 32), so that no bracket looks far ahead.
const (
	maxGroup      = 4096
	maxParenDepth = 32
	maxRefLabel   = 999 // CommonMark's longest link label
)

// link handles a link whose text is src[open+1:close] and which ends at
// end. A link written as prose (see index.prose; never an image) keeps its
// text, scanned like the rest, followed by the citations of its targets
// that were gathered; the others are dropped. Any other link — a citation
// marker, a number, an image — becomes the citations of its known targets,
// or goes whole.
func (p *pass) link(start, open, close, end int, targets []string) int {
	if start != open || !p.ix.prose(p.src[open+1:close], targets) {
		return p.cite(end, targets)
	}
	var known []string
	for _, t := range targets {
		if _, ok := p.ix.lookup(t); ok {
			known = append(known, t)
		} else {
			p.dropped++
		}
	}
	p.anchors = append(p.anchors, anchor{close: close, end: end, outLen: len(p.out), cite: known})
	return open + 1
}

// inlineTargets parses the "(destination "title")" of an inline link at
// s[open] == '(' and returns its targets and the end of the link. Several
// URL-like destinations separated by commas, semicolons or spaces are
// several targets. It errs on the side of seeing a link: a '<' that does
// not make a <destination> is tried as a plain one.
func inlineTargets(d *doc, open int) ([]string, int, bool) {
	s := d.s
	i := skipSpace(s, open+1)
	if j := angleDest(d, i); j > i {
		if end, ok := linkEnd(d, j); ok {
			return []string{s[i+1 : j-1]}, end, true
		}
	}
	// The destination ends at a space or an unbalanced ')'; jump from
	// parenthesis to parenthesis.
	depth, j := 0, i
loop:
	for {
		j = d.index(j, "() \t\n\r\f")
		if j < 0 {
			j = len(s)
			break
		}
		switch s[j] {
		case '(':
			depth++
			if depth > maxParenDepth {
				j = -1
				break loop
			}
		case ')':
			if depth == 0 {
				break loop
			}
			depth--
		default:
			break loop
		}
		j++
	}
	if j >= 0 {
		if end, ok := linkEnd(d, j); ok {
			return []string{s[i:j]}, end, true
		}
	}
	// Several destinations: "(short1, short2)".
	k := d.index(open, ")")
	if k < 0 || k-open > maxGroup {
		return nil, 0, false
	}
	if targets, ok := groupTargets(s[open+1 : k]); ok {
		return targets, k + 1, true
	}
	return nil, 0, false
}

// linkEnd parses what may follow a link destination at s[i] — spaces, an
// optional "title", 'title' or (title), spaces — up to the closing ')', and
// returns the end of the link.
func linkEnd(d *doc, i int) (int, bool) {
	s := d.s
	i = skipSpace(s, i)
	if i < len(s) && s[i] == ')' {
		return i + 1, true
	}
	if i < len(s) && (s[i] == '"' || s[i] == '\'' || s[i] == '(') {
		closer := s[i]
		if closer == '(' {
			closer = ')'
		}
		if j := d.index(i+1, string(closer)); j >= 0 {
			if k := skipSpace(s, j+1); k < len(s) && s[k] == ')' {
				return k + 1, true
			}
		}
	}
	return 0, false
}

// angleDest returns the end of a "<destination>" at s[i], or i.
func angleDest(d *doc, i int) int {
	s := d.s
	if i >= len(s) || s[i] != '<' {
		return i
	}
	j := d.index(i+1, "<>\n")
	if j < 0 || s[j] != '>' {
		return i
	}
	return j + 1
}

// doc is a text being scanned, with next-occurrence tables so that looking
// ahead for a closing character costs O(1): text full of unclosed links is
// not scanned over and over, and no link is too long to be recognised.
type doc struct {
	s    string
	sets []string  // the byte sets asked for (a few), …
	next [][]int32 // … and for each, for each i, the first j >= i with s[j] in the set, or -1
}

func newDoc(s string) *doc { return &doc{s: s} }

// index returns the first position j >= i with s[j] in set, or -1.
func (d *doc) index(i int, set string) int {
	if i >= len(d.s) {
		return -1
	}
	if len(d.s) > math.MaxInt32 {
		j := strings.IndexAny(d.s[i:], set)
		if j < 0 {
			return -1
		}
		return i + j
	}
	var tab []int32
	for k, known := range d.sets {
		if known == set {
			tab = d.next[k]
			break
		}
	}
	if tab == nil {
		tab = make([]int32, len(d.s)+1)
		tab[len(d.s)] = -1
		for k := len(d.s) - 1; k >= 0; k-- {
			if strings.IndexByte(set, d.s[k]) >= 0 {
				tab[k] = int32(k)
			} else {
				tab[k] = tab[k+1]
			}
		}
		d.sets = append(d.sets, set)
		d.next = append(d.next, tab)
	}
	return int(tab[i])
}

// groupTargets splits a bracket's content into targets when every item is
// URL-like and at least one is a short URL.
func groupTargets(content string) ([]string, bool) {
	items := strings.FieldsFunc(content, isListSep)
	short := false
	for k, it := range items {
		it = strings.Trim(it, "<>")
		if !urlLike(it) {
			return nil, false
		}
		short = short || indexFold(it, shortHostPath) >= 0
		items[k] = it
	}
	return items, short
}

// parenGroup handles "(short1, short2)" at s[open] == '('.
func (p *pass) parenGroup(open int) (int, bool) {
	s := p.src
	j := p.doc.index(open+1, "()\n")
	if j < 0 || s[j] != ')' || j-open > maxGroup {
		return 0, false
	}
	targets, ok := groupTargets(s[open+1 : j])
	if !ok {
		return 0, false
	}
	return p.cite(j+1, targets), true
}

// autolink handles "<scheme:…>" at s[open] == '<'.
func (p *pass) autolink(open int) (int, bool) {
	s := p.src
	j := p.doc.index(open+1, "<> \t\r\n")
	if j < 0 || s[j] != '>' {
		return 0, false
	}
	target := s[open+1 : j]
	colon := strings.IndexByte(target, ':')
	if colon < 2 || colon > 32 || !isScheme(target[:colon]) {
		return 0, false
	}
	return p.cite(j+1, []string{target}), true
}

func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-')) {
			return false
		}
	}
	return s != ""
}

func isListSep(r rune) bool {
	return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
}

// urlLike reports whether s looks like a URL rather than words.
func urlLike(s string) bool {
	return strings.Contains(s, "://") || indexFold(s, shortHostPath) >= 0
}

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// isSpace reports whether c is Markdown whitespace. Other control
// characters are kept in link destinations, so that a lax renderer's link
// is still checked.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

// cite replaces the link that ends at end with the citations of its known
// targets, or removes it when none is known.
func (p *pass) cite(end int, targets []string) int {
	wrote := false
	for _, t := range targets {
		id, ok := p.ix.lookup(t)
		if !ok {
			p.dropped++
			continue
		}
		n, seen := p.number[id]
		if !seen {
			n = len(p.cited) + 1
			p.number[id] = n
			p.cited = append(p.cited, p.ix.sources[id])
		}
		if id == p.lastID && onlySeparators(p.out[p.lastEnd:]) {
			p.out = p.out[:p.lastEnd]
			wrote = true
			continue
		}
		if wrote || escapes(p.out) {
			// A space between citations, and after a backslash that would
			// escape the citation's bracket.
			p.out = append(p.out, ' ')
		} else if p.dropJoin(false) {
			if n := len(p.out); n > 0 && !strings.ContainsRune(" \t\n([", rune(p.out[n-1])) {
				p.out = append(p.out, ' ')
			}
		}
		p.out = append(p.out, '[')
		p.out = strconv.AppendInt(p.out, int64(n), 10)
		p.out = append(p.out, "]("...)
		p.out = append(p.out, p.ix.links[id]...)
		p.out = append(p.out, ')')
		p.lastID, p.lastEnd = id, len(p.out)
		wrote = true
	}
	if wrote {
		return end
	}
	p.dropJoin(true)
	end = p.tidy(end)
	p.lastCut = len(p.out)
	return end
}

// escapes reports whether b ends with a backslash that escapes what
// follows (an odd run of them).
func escapes(b []byte) bool {
	n := 0
	for n < len(b) && b[len(b)-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

// dropJoin removes what joined a citation to one removed just before it
// — a separator or a conjunction ("[a], [b] and [c]" with [a] and [b]
// removed is "[c]", not ", and [c]") — and, for a removal (removal), what
// joined it to the citation kept before it. It reports whether it removed
// anything.
func (p *pass) dropJoin(removal bool) bool {
	out := p.out
	k := len(out)
	for k > 0 && (out[k-1] == ' ' || out[k-1] == '\t') {
		k--
	}
	w := k
	for w > 0 && (isLetter(out[w-1]) || out[w-1] == '&') {
		w--
	}
	if w < k && (!conjunctions[strings.ToLower(string(out[w:k]))] || (w > 0 && out[w-1] != ' ' && out[w-1] != '\t' && out[w-1] != ',')) {
		return false // a word, not a conjunction
	}
	b := w
	for b > 0 && (out[b-1] == ' ' || out[b-1] == '\t') {
		b--
	}
	if b > 0 && (out[b-1] == ',' || out[b-1] == ';') {
		b--
		for b > 0 && (out[b-1] == ' ' || out[b-1] == '\t') {
			b--
		}
	}
	if b == len(out) || !(b == p.lastCut || removal && p.lastID >= 0 && b == p.lastEnd) {
		return false
	}
	p.out = out[:b]
	return true
}

// conjunctions are the words that join citations in a list.
// Words of one letter ("y", "e") are left out: they are too often not one.
var conjunctions = map[string]bool{"and": true, "or": true, "&": true, "und": true, "oder": true, "et": true, "ou": true, "og": true, "och": true}

func onlySeparators(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != ',' && c != ';' {
			return false
		}
	}
	return true
}

// tidy cleans up after a removal that ended at src[end]: spaces before
// punctuation or other spaces, separators left dangling, brackets left
// empty. It returns where scanning goes on.
func (p *pass) tidy(end int) int {
	s := p.src
	for {
		next := byte(0)
		if end < len(s) {
			next = s[end]
		}
		switch {
		case next == 0 || next == '\n' || next == '\r' || closingAt(s, end):
			p.trimSpaces()
			if next != ',' && next != ';' {
				p.trimSeparator()
			}
		case next == ' ' || next == '\t':
			p.trimSpaces()
			if n := len(p.out); n == 0 || p.out[n-1] == '\n' || p.out[n-1] == '(' || p.out[n-1] == '[' {
				end = skipHSpace(s, end)
			}
		}
		// A separator right after an opening bracket or a line start.
		if n := len(p.out); n == 0 || p.out[n-1] == '\n' || p.out[n-1] == '(' || p.out[n-1] == '[' {
			if k := skipHSpace(s, end); k < len(s) && (s[k] == ',' || s[k] == ';') {
				end = skipHSpace(s, k+1)
				continue
			}
		}
		// Brackets left empty.
		if n := len(p.out); n > p.lastEndFloor() && (p.out[n-1] == '(' || p.out[n-1] == '[') {
			closer := byte(')')
			if p.out[n-1] == '[' {
				closer = ']'
			}
			if k := skipHSpace(s, end); k < len(s) && s[k] == closer {
				p.out = p.out[:n-1]
				end = k + 1
				continue
			}
		}
		return end
	}
}

// lastEndFloor is the length of out that tidying must not cut into.
func (p *pass) lastEndFloor() int {
	if p.lastID < 0 {
		return 0
	}
	return p.lastEnd
}

func (p *pass) trimSpaces() {
	for n := len(p.out); n > p.lastEndFloor() && (p.out[n-1] == ' ' || p.out[n-1] == '\t'); n = len(p.out) {
		p.out = p.out[:n-1]
	}
}

// trimSeparator drops a ',' or ';' (and the spaces before it) left at the
// end of out.
func (p *pass) trimSeparator() {
	if n := len(p.out); n > p.lastEndFloor() && (p.out[n-1] == ',' || p.out[n-1] == ';') {
		p.out = p.out[:n-1]
		p.trimSpaces()
	}
}

// closingAt reports whether s[i:] starts with closing punctuation: one of
// .,;:!?)]} or a non-ASCII closing, final-quote or other punctuation mark
// ("。", "」", "…").
func closingAt(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	if s[i] < utf8.RuneSelf {
		return isClosing(s[i])
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.In(r, unicode.Pe, unicode.Pf, unicode.Po)
}

func isClosing(c byte) bool {
	switch c {
	case '.', ',', ';', ':', '!', '?', ')', ']', '}':
		return true
	}
	return false
}

func skipHSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// indexFold is strings.Index ignoring ASCII case only (so that the match
// has the byte length of sub).
func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if hasPrefixFold(s[i:], sub) {
			return i
		}
	}
	return -1
}

func hasSuffixFold(b []byte, suffix string) bool {
	if len(b) < len(suffix) {
		return false
	}
	b = b[len(b)-len(suffix):]
	for i := range len(suffix) {
		if lower(b[i]) != lower(suffix[i]) {
			return false
		}
	}
	return true
}

func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if lower(s[i]) != lower(prefix[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
