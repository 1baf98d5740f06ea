package citation

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bare URLs
//
// Renderers turn bare URLs into links (GFM's autolink extension links
// www.… and http(s)://…, others link any scheme), so a URL a page planted
// in a summary would reach the final answer as a link. Finalize therefore
// treats every bare URL outside code as a would-be citation: a gathered
// source's URL (or short URL) becomes its citation [n](url); any other is
// replaced by its host in a code span — "cite http://evil.example/x?t=1"
// becomes "cite `evil.example`" — so the reader still sees which site was
// named, but there is no link, no path and no query; a URL without a host
// is removed. Each such URL counts in Dropped.
//
// A bare URL starts at "scheme://" (a scheme of letters, digits, '+', '.'
// and '-' that starts with a letter), at "www." followed by a letter or
// digit and not preceded by one of those, '_', '.' or '-', or at a short
// URL's host path. It ends at whitespace, at any of []()<>"'`! and at any
// non-ASCII character that is not a letter, digit or mark (so at CJK and
// full-width punctuation, typographic quotes and brackets), and at letters
// of scripts written without spaces (Han, kana, Hangul, Thai, …); trailing
// sentence punctuation .,;:!?*_~ is not part of it.

// urlFinder finds the bare URLs of a word, remembering where the next
// candidates of each kind are so that a word full of URLs is scanned once.
type urlFinder struct {
	ready              bool
	scheme, www, short int // next "://", "www." and short host path; -1 none
}

// next returns the first bare URL in s[i:], as [start, end).
func (f *urlFinder) next(s string, i int) (int, int, bool) {
	if !f.ready {
		f.ready = true
		f.scheme, f.www, f.short = -2, -2, -2 // not looked for yet
	}
	for {
		if f.scheme != -1 && f.scheme < i {
			f.scheme = indexFrom(s, "://", i, strings.Index)
		}
		if f.www != -1 && f.www < i {
			f.www = indexFrom(s, "www.", i, indexFold)
		}
		if f.short != -1 && f.short < i {
			f.short = indexFrom(s, shortHostPath, i, indexFold)
		}
		start, kind := -1, 0
		for k, c := range []int{f.scheme, f.www, f.short} {
			if c >= 0 && (start < 0 || c < start) {
				start, kind = c, k
			}
		}
		if start < 0 {
			return 0, 0, false
		}
		switch kind {
		case 0:
			if b := schemeStart(s, i, start); b < start {
				return b, tokenEnd(s, start+3), true
			}
			f.scheme = indexFrom(s, "://", start+1, strings.Index)
		case 1:
			if (start == 0 || !isHostByte(s[start-1])) && start+4 < len(s) && isAlnum(s[start+4]) {
				return start, tokenEnd(s, start+4), true
			}
			f.www = indexFrom(s, "www.", start+1, indexFold)
		default:
			return start, tokenEnd(s, start), true
		}
	}
}

// indexFrom is index(s[i:], sub) as a position in s, or -1.
func indexFrom(s, sub string, i int, index func(string, string) int) int {
	if i > len(s) {
		return -1
	}
	if k := index(s[i:], sub); k >= 0 {
		return i + k
	}
	return -1
}

// schemeStart returns where the scheme before "://" at c starts (not
// before from), or c when there is none.
func schemeStart(s string, from, c int) int {
	b := c
	for b > from && c-b < 32 && isSchemeByte(s[b-1]) {
		b--
	}
	for b < c && !isLetter(s[b]) {
		b++
	}
	return b
}

// tokenEnd returns the end of the bare URL whose host starts at s[i]: a
// short URL ends with its id ("…/id/1-8.Next" is "…/id/1-8" and the word
// "Next"), any other URL where urlEnd says.
func tokenEnd(s string, i int) int {
	if !hasPrefixFold(s[i:], shortHostPath) {
		return urlEnd(s, i)
	}
	j := i + len(shortHostPath)
	for j < len(s) && isIDByte(s[j]) {
		j++
	}
	return j
}

// urlEnd returns the end of the bare URL whose host starts at s[i]. As in
// GFM, parentheses are part of it when balanced
// (https://en.wikipedia.org/wiki/Go_(programming_language)); an unbalanced
// ')' ends it.
func urlEnd(s string, i int) int {
	j, depth := i, 0
	for j < len(s) {
		c := s[j]
		switch {
		case c == '(':
			depth++
			j++
			continue
		case c == ')':
			if depth == 0 {
				break
			}
			depth--
			j++
			continue
		}
		if c == ')' {
			break
		}
		if c < utf8.RuneSelf {
			if c <= ' ' || c == 0x7f || isDelim(c) {
				break
			}
			j++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[j:])
		if !urlRune(r) {
			break
		}
		j += n
	}
	for j > i && strings.IndexByte(".,;:!?*_~", s[j-1]) >= 0 {
		j--
	}
	return j
}

// spaceless are scripts written without spaces between words: a URL typed
// into such text ends where they begin.
var spaceless = []*unicode.RangeTable{unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar}

func urlRune(r rune) bool {
	if r == utf8.RuneError || !unicode.In(r, unicode.L, unicode.N, unicode.M) {
		return false
	}
	return !unicode.In(r, spaceless...)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool  { return isLetter(c) || c >= '0' && c <= '9' }

func isSchemeByte(c byte) bool { return isAlnum(c) || c == '+' || c == '.' || c == '-' }

// isHostByte reports whether c, before "www.", makes it part of a longer
// word or host rather than the start of a URL. '_' is not one: GFM links
// "_www.example.com_" (emphasis around an autolink).
func isHostByte(c byte) bool { return isAlnum(c) || c == '.' || c == '-' }

// bareURL handles the bare URL src[start:end] and returns where scanning
// goes on.
func (p *pass) bareURL(start, end int) int {
	tok := p.src[start:end]
	if indexFold(tok, shortHostPath) >= 0 {
		return p.cite(end, []string{tok})
	}
	if target, ok := p.ix.bareTarget(tok); ok {
		return p.cite(end, []string{target})
	}
	p.dropped++
	host := bareHost(tok)
	if host == "" {
		return p.tidy(end)
	}
	p.out = append(p.out, '`')
	p.out = append(p.out, host...)
	p.out = append(p.out, '`')
	return end
}

// bareTarget returns the form of a bare URL under which a gathered source
// is known; "www.…" is tried with https:// and http://.
func (ix *index) bareTarget(tok string) (string, bool) {
	cands := []string{tok}
	if hasPrefixFold(tok, "www.") {
		cands = append(cands, "https://"+tok, "http://"+tok)
	}
	for _, c := range cands {
		if _, ok := ix.lookup(c); ok {
			return c, true
		}
	}
	return "", false
}

// bareHost returns the host of a bare URL for showing in a code span:
// lower case, without user information, port or leading "www.", and with
// nothing but letters, digits, marks, '.' and '-'; "" when none is left.
func bareHost(tok string) string {
	h := tok
	if k := strings.Index(h, "://"); k >= 0 {
		h = h[k+3:]
	}
	if k := strings.IndexAny(h, "/?#\\"); k >= 0 {
		h = h[:k]
	}
	if k := strings.LastIndexByte(h, '@'); k >= 0 {
		h = h[k+1:]
	}
	if k := strings.LastIndexByte(h, ':'); k >= 0 {
		h = h[:k]
	}
	h = strings.Map(func(r rune) rune {
		switch {
		case r < utf8.RuneSelf && (isAlnum(byte(r)) || r == '.' || r == '-'):
			return unicode.ToLower(r)
		case r >= utf8.RuneSelf && unicode.In(r, unicode.L, unicode.N, unicode.M):
			return unicode.ToLower(r)
		}
		return -1
	}, h)
	for {
		h = strings.Trim(h, ".-")
		if !strings.HasPrefix(h, "www.") {
			return h
		}
		h = h[len("www."):]
	}
}

// prose reports whether a link was written as prose, so that its text
// stays (followed by the citation of its target when that was gathered):
// text that is not empty, not a citation number (3, S3, ^3), to a target
// that is no short URL, and — when the target is gathered — is neither that page's
// URL nor its label or host, which make the link a citation marker. A
// link to a page not gathered keeps its text whatever it says (D5 of
// issue 23: "Mehr unter [uefa](…) und mehr" keeps "uefa").
func (ix *index) prose(label string, targets []string) bool {
	l := strings.TrimSpace(label)
	if l == "" || isCitationText(l) {
		return false
	}
	for _, t := range targets {
		if indexFold(t, shortHostPath) >= 0 {
			return false
		}
		if id, ok := ix.lookup(t); ok && (urlLike(l) || hasPrefixFold(l, "www.") || ix.names(id, l)) {
			return false
		}
	}
	return true
}

// names reports whether text is a name of the id-th source: one of the
// labels it was gathered under, or its host.
func (ix *index) names(id int, text string) bool {
	t := cleanLabel(text)
	for _, l := range ix.labels[id] {
		if strings.EqualFold(t, l) {
			return true
		}
	}
	u := ix.sources[id].URL
	return strings.EqualFold(t, hostLabel("", u)) || strings.EqualFold(t, hostOf(u))
}

// isCitationText reports whether link text is a citation number: 3, S3,
// ^3.
func isCitationText(s string) bool {
	s = strings.TrimPrefix(s, "^")
	if s != "" && (s[0] == 'S' || s[0] == 's') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
