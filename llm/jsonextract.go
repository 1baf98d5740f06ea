package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrNoJSON means a reply held no JSON value that could be read, even
// leniently. Errors from ExtractJSON and the cause inside a *StructuredError
// match it with errors.Is when that was the problem.
var ErrNoJSON = errors.New("no JSON found in the reply")

// Limits of the extractor. They bound the work done on a hostile or
// pathological reply; real replies stay far below them.
const (
	maxJSONDepth      = 512 // nesting depth of one value
	maxFailedStarts   = 32  // '{' or '[' positions that did not start a readable value, per source
	maxJSONCandidates = 16  // values handed to Structured for validation
)

// ExtractJSON finds the JSON document in a model's reply and returns it as
// strict, compact JSON: the whole reply (or code fence) when it is one JSON
// value; otherwise the first object in it; otherwise the first array. It
// reads what models actually emit:
//
//   - reasoning blocks such as <think>…</think> (also <thinking>, <reasoning>),
//     a closing tag whose opening tag was in the prompt, and an unclosed
//     leading block (then the last value inside it is preferred);
//   - Markdown code fences (```json … ```), also unclosed ones, preferred over
//     the surrounding prose;
//   - prose before and after the value, with braces in strings handled;
//   - lenient syntax, repaired: trailing and missing commas, // /* */ and #
//     comments, single-quoted and “smart-quoted” strings, unquoted keys,
//     unescaped quotes and raw newlines inside strings, invalid escapes,
//     Python literals (True, False, None), a leading '+' or leading zeros on
//     numbers;
//   - a reply that is a JSON string holding the document (double-encoded).
//
// It never completes a truncated value (a reply cut off at the token limit is
// an error, not a silently shorter result). The error matches ErrNoJSON and
// describes the first syntax problem found.
func ExtractJSON(text string) ([]byte, error) {
	cands, err := jsonCandidates(text, 0)
	if err != nil {
		return nil, err
	}
	return cands[0], nil
}

// jsonCandidates returns the JSON values found in text, as strict JSON, most
// likely first: values of the preferred kind ('{' object, '[' array, 0 any
// scalar) before the others, fenced before unfenced. The result is non-empty
// when err is nil.
func jsonCandidates(text string, prefer byte) ([][]byte, error) {
	answer, reasoning, unclosed := splitReasoning(text)

	type source struct {
		text    string
		reverse bool // prefer later values (inside an unclosed reasoning block)
	}
	var sources []source
	for _, f := range fencedBlocks(answer) {
		sources = append(sources, source{text: f})
	}
	sources = append(sources, source{text: answer})
	if unclosed {
		for _, f := range fencedBlocks(reasoning) {
			sources = append(sources, source{text: f, reverse: true})
		}
		sources = append(sources, source{text: reasoning, reverse: true})
	}

	kinds := []byte{'{', '[', 0}
	switch prefer {
	case '[':
		kinds = []byte{'[', '{', 0}
	case 0:
		kinds = []byte{0, '{', '['}
	}

	var (
		out      [][]byte
		seen     = map[string]bool{}
		scanErr  error // first problem inside a '{' or '[' that did not parse
		wholeErr error // first problem reading a source as one JSON scalar
	)
	add := func(v []byte) {
		if len(out) < maxJSONCandidates && !seen[string(v)] {
			seen[string(v)] = true
			out = append(out, v)
		}
	}
	for _, kind := range kinds {
		for _, src := range sources {
			var found [][]byte
			if kind == 0 {
				v, err := parseWhole(src.text, 1)
				if wholeErr == nil && err != nil && looksLikeScalar(src.text) {
					wholeErr = err
				}
				if v != nil {
					found = append(found, v)
				}
			} else {
				var err error
				found, err = scanValues(src.text, kind)
				if scanErr == nil {
					scanErr = err
				}
			}
			if src.reverse {
				for i, j := 0, len(found)-1; i < j; i, j = i+1, j-1 {
					found[i], found[j] = found[j], found[i]
				}
			}
			for _, v := range found {
				add(v)
			}
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	switch {
	case strings.TrimSpace(text) == "":
		return nil, fmt.Errorf("%w: the reply is empty", ErrNoJSON)
	case scanErr != nil:
		return nil, fmt.Errorf("%w: %w", ErrNoJSON, scanErr)
	case wholeErr != nil:
		return nil, fmt.Errorf("%w: %w", ErrNoJSON, wholeErr)
	default:
		return nil, fmt.Errorf("%w: the reply is prose without a JSON object", ErrNoJSON)
	}
}

// looksLikeScalar reports whether s (trimmed) starts like a JSON scalar, so
// that a failure to read it is worth reporting.
func looksLikeScalar(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && (s[0] == '"' || s[0] == '-' || isDigit(s[0]) || strings.HasPrefix(s, "“"))
}

// parseWhole reads all of s (trimmed) as one lenient JSON value. A string
// value whose content holds a JSON object or array is unwrapped (up to depth
// times), for replies that double-encode the document.
func parseWhole(s string, depth int) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	p := &lenientParser{s: s}
	if err := p.value(); err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return nil, p.errorf("unexpected text after the JSON value")
	}
	if depth > 0 && len(p.out) > 0 && p.out[0] == '"' {
		var inner string
		if err := json.Unmarshal(p.out, &inner); err == nil {
			t := strings.TrimSpace(inner)
			if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
				if v, err := parseWhole(t, depth-1); err == nil && v != nil {
					return v, nil
				}
			}
		}
	}
	return p.out, nil
}

// scanValues returns the top-level values starting with open ('{' or '[')
// found in prose s, in order. The error is the first syntax problem met.
func scanValues(s string, open byte) ([][]byte, error) {
	var (
		out      [][]byte
		firstErr error
		failed   int
	)
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], open)
		if j < 0 {
			break
		}
		start := i + j
		p := &lenientParser{s: s, i: start}
		if err := p.value(); err == nil {
			out = append(out, p.out)
			i = p.i
			continue
		} else if firstErr == nil {
			firstErr = err
		}
		failed++
		if failed >= maxFailedStarts {
			break
		}
		if end, ok := matchBrackets(s, start); ok {
			i = end
		} else {
			i = start + 1
		}
	}
	return out, firstErr
}

// matchBrackets returns the index just past the bracket that closes the one
// at s[start], counting {} and [] together and skipping "…" and “…” strings.
func matchBrackets(s string, start int) (int, bool) {
	depth := 0
	for i := start; i < len(s); {
		switch c := s[i]; {
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		case c == '"':
			i++
			for i < len(s) && s[i] != '"' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
		case strings.HasPrefix(s[i:], "“"):
			k := strings.Index(s[i+len("“"):], "”")
			if k < 0 {
				return 0, false
			}
			i += len("“") + k + len("”")
			continue
		}
		i++
	}
	return 0, false
}

// reasoningTags are the tag names reasoning models wrap their thinking in.
var reasoningTags = []string{"think", "thinking", "reasoning"}

// splitReasoning removes reasoning blocks from the start of a reply. It
// returns the answer text; when a leading block is never closed, answer is
// what preceded it, reasoning is the block's text and unclosed is true.
//
// A closing tag with no opening tag before it (some servers put the opening
// tag in the prompt) drops everything up to and including it.
func splitReasoning(s string) (answer, reasoning string, unclosed bool) {
	for {
		t := strings.TrimLeft(s, " \t\r\n\ufeff")
		name, n := tagAt(t, false)
		if n == 0 {
			break
		}
		rest := t[n:]
		end, endLen := findTag(rest, name, true)
		if end < 0 {
			return "", rest, true
		}
		s = rest[end+endLen:]
	}
	// An orphan closing tag: its opening tag was part of the prompt.
	for _, name := range reasoningTags {
		if end, endLen := findTag(s, name, true); end >= 0 {
			if open, _ := findTag(s[:end], name, false); open < 0 {
				s = s[end+endLen:]
			}
		}
	}
	return s, "", false
}

// tagAt reports whether s starts with a reasoning tag (<name> or </name>,
// ASCII case-insensitive) and returns its name and length.
func tagAt(s string, closing bool) (string, int) {
	for _, name := range reasoningTags {
		tag := "<" + name + ">"
		if closing {
			tag = "</" + name + ">"
		}
		if len(s) >= len(tag) && strings.EqualFold(s[:len(tag)], tag) {
			return name, len(tag)
		}
	}
	return "", 0
}

// findTag returns the index and length of the first <name> (or </name>) in s,
// ASCII case-insensitive, or -1.
func findTag(s, name string, closing bool) (int, int) {
	tag := "<" + name + ">"
	if closing {
		tag = "</" + name + ">"
	}
	for i := 0; i+len(tag) <= len(s); i++ {
		if s[i] == '<' && strings.EqualFold(s[i:i+len(tag)], tag) {
			return i, len(tag)
		}
	}
	return -1, 0
}

// fenceRE matches a Markdown code fence and its content, up to the closing
// fence or the end of the text (a fence the model never closed).
var fenceRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("(?s)```[ \t]*([A-Za-z0-9_+.-]*)(.*?)(?:```|\\z)") })

// fencedBlocks returns the contents of the code fences in s whose language is
// empty or JSON-like, in order.
func fencedBlocks(s string) []string {
	if !strings.Contains(s, "```") {
		return nil
	}
	var out []string
	for _, m := range fenceRE().FindAllStringSubmatch(s, -1) {
		switch strings.ToLower(m[1]) {
		case "", "json", "jsonc", "json5", "javascript", "js", "jsonl":
			if body := strings.TrimSpace(m[2]); body != "" {
				out = append(out, body)
			}
		}
	}
	return out
}

// lenientParser reads one JSON value leniently from s at i and writes it to
// out as strict JSON.
type lenientParser struct {
	s     string
	i     int
	out   []byte
	depth int
}

// jsonSyntaxError is a problem the lenient parser could not repair.
type jsonSyntaxError struct {
	msg  string
	near string // the text around the problem
}

func (e *jsonSyntaxError) Error() string {
	if e.near == "" {
		return e.msg
	}
	return fmt.Sprintf("%s near %q", e.msg, e.near)
}

func (p *lenientParser) errorf(format string, args ...any) error {
	from, to := max(p.i-24, 0), min(p.i+24, len(p.s))
	for from > 0 && !utf8.RuneStart(p.s[from]) {
		from--
	}
	for to < len(p.s) && !utf8.RuneStart(p.s[to]) {
		to++
	}
	return &jsonSyntaxError{msg: fmt.Sprintf(format, args...), near: p.s[from:to]}
}

func (p *lenientParser) eof(what string) error {
	return p.errorf("unexpected end of text inside %s (the reply may be cut off)", what)
}

// skipSpace skips whitespace (including no-break space and BOM) and comments.
func (p *lenientParser) skipSpace() {
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.i++
		case c == '/' && p.i+1 < len(p.s) && p.s[p.i+1] == '/', c == '#':
			if k := strings.IndexByte(p.s[p.i:], '\n'); k >= 0 {
				p.i += k + 1
			} else {
				p.i = len(p.s)
			}
		case c == '/' && p.i+1 < len(p.s) && p.s[p.i+1] == '*':
			if k := strings.Index(p.s[p.i+2:], "*/"); k >= 0 {
				p.i += 2 + k + 2
			} else {
				p.i = len(p.s)
			}
		case strings.HasPrefix(p.s[p.i:], "\u00a0"):
			p.i += len("\u00a0")
		case strings.HasPrefix(p.s[p.i:], "\ufeff"):
			p.i += len("\ufeff")
		default:
			return
		}
	}
}

func (p *lenientParser) value() error {
	p.skipSpace()
	if p.i >= len(p.s) {
		return p.eof("a value")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"' || c == '\'':
		return p.str()
	case strings.HasPrefix(p.s[p.i:], "“") || strings.HasPrefix(p.s[p.i:], "”"):
		return p.str()
	case c == '-' || c == '+' || c == '.' || isDigit(c):
		return p.number()
	case isIdentStart(c):
		return p.word()
	default:
		r, _ := utf8.DecodeRuneInString(p.s[p.i:])
		return p.errorf("unexpected %q where a value should be", r)
	}
}

func (p *lenientParser) enter() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return p.errorf("JSON nested deeper than %d levels", maxJSONDepth)
	}
	return nil
}

func (p *lenientParser) object() error {
	if err := p.enter(); err != nil {
		return err
	}
	p.i++ // {
	p.out = append(p.out, '{')
	members := 0
	for {
		p.skipSpace()
		if p.i >= len(p.s) {
			return p.eof("an object")
		}
		switch p.s[p.i] {
		case '}':
			p.i++
			p.out = append(p.out, '}')
			p.depth--
			return nil
		case ',': // leading, doubled and trailing commas are dropped
			p.i++
			continue
		}
		if members > 0 {
			p.out = append(p.out, ',') // also when the model left the comma out
		}
		if err := p.key(); err != nil {
			return err
		}
		p.skipSpace()
		if p.i >= len(p.s) {
			return p.eof("an object")
		}
		if p.s[p.i] != ':' {
			return p.errorf("expected ':' after an object key")
		}
		p.i++
		p.out = append(p.out, ':')
		if err := p.value(); err != nil {
			return err
		}
		members++
	}
}

func (p *lenientParser) key() error {
	c := p.s[p.i]
	switch {
	case c == '"' || c == '\'' || strings.HasPrefix(p.s[p.i:], "“") || strings.HasPrefix(p.s[p.i:], "”"):
		return p.str()
	case isIdentStart(c):
		start := p.i
		for p.i < len(p.s) && (isIdentStart(p.s[p.i]) || isDigit(p.s[p.i]) || p.s[p.i] == '-') {
			p.i++
		}
		p.out = appendJSONString(p.out, p.s[start:p.i])
		return nil
	default:
		r, _ := utf8.DecodeRuneInString(p.s[p.i:])
		return p.errorf("unexpected %q where an object key should be", r)
	}
}

func (p *lenientParser) array() error {
	if err := p.enter(); err != nil {
		return err
	}
	p.i++ // [
	p.out = append(p.out, '[')
	elems := 0
	for {
		p.skipSpace()
		if p.i >= len(p.s) {
			return p.eof("an array")
		}
		switch p.s[p.i] {
		case ']':
			p.i++
			p.out = append(p.out, ']')
			p.depth--
			return nil
		case ',':
			p.i++
			continue
		}
		if elems > 0 {
			p.out = append(p.out, ',')
		}
		if err := p.value(); err != nil {
			return err
		}
		elems++
	}
}

// str reads a string delimited by ", ' or “ ”. Inside a "…" or '…' string a
// quote character only ends the string when what follows it could follow a
// string in JSON (',', ':', '}', ']', a line break or the end); otherwise it
// is taken as an unescaped quote inside the text.
func (p *lenientParser) str() error {
	var closers []string
	heuristic := true
	switch {
	case p.s[p.i] == '"':
		closers = []string{`"`}
		p.i++
	case p.s[p.i] == '\'':
		closers = []string{`'`}
		p.i++
	default: // “ or ”: smart quotes; any double quote closes
		closers = []string{"”", "“", `"`}
		heuristic = false
		p.i += len("“")
	}
	var b strings.Builder
	for {
		if p.i >= len(p.s) {
			return p.eof("a string")
		}
		c := p.s[p.i]
		if c == '\\' {
			if err := p.escape(&b); err != nil {
				return err
			}
			continue
		}
		if closer := hasAnyPrefix(p.s[p.i:], closers); closer != "" {
			after := p.i + len(closer)
			if !heuristic || endsString(p.s, after) {
				p.i = after
				p.out = appendJSONString(p.out, b.String())
				return nil
			}
			b.WriteString(closer)
			p.i = after
			continue
		}
		b.WriteByte(c) // raw control characters and invalid UTF-8 are fixed on output
		p.i++
	}
}

// endsString reports whether a quote ending just before s[i] can close a
// string: what follows (after spaces and tabs) is a JSON delimiter, a line
// break, a comment, the end of the text, or — after a space — another quote
// (a missing comma: ["a" "b"]).
func endsString(s string, i int) bool {
	j := i
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j >= len(s) {
		return true
	}
	switch s[j] {
	case ',', ':', '}', ']', '\n', '\r':
		return true
	case '"', '\'':
		return j > i
	case '/':
		return j+1 < len(s) && (s[j+1] == '/' || s[j+1] == '*')
	case '#':
		return j > i && (j+1 == len(s) || s[j+1] == ' ' || s[j+1] == '\t' || s[j+1] == '\n')
	}
	return false
}

func hasAnyPrefix(s string, prefixes []string) string {
	for _, pre := range prefixes {
		if strings.HasPrefix(s, pre) {
			return pre
		}
	}
	return ""
}

// escape reads a backslash escape at p.i into b. Unknown escapes keep their
// backslash (the model probably meant one); \' is a quote.
func (p *lenientParser) escape(b *strings.Builder) error {
	if p.i+1 >= len(p.s) {
		p.i++
		return p.eof("a string")
	}
	c := p.s[p.i+1]
	p.i += 2
	switch c {
	case '"', '\\', '/', '\'':
		b.WriteByte(c)
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		r, ok := p.hex4()
		if !ok {
			b.WriteString(`\u`)
			return nil
		}
		if utf16.IsSurrogate(r) {
			if strings.HasPrefix(p.s[p.i:], `\u`) {
				save := p.i
				p.i += 2
				if r2, ok := p.hex4(); ok {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						b.WriteRune(d)
						return nil
					}
				}
				p.i = save
			}
			r = utf8.RuneError
		}
		b.WriteRune(r)
	default:
		b.WriteByte('\\')
		b.WriteByte(c)
	}
	return nil
}

func (p *lenientParser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(v), true
}

// number reads a JSON number, tolerating a leading '+', leading zeros and a
// dot without digits on one side ("1.", ".5").
func (p *lenientParser) number() error {
	s := p.s
	if s[p.i] == '+' {
		p.i++
	}
	neg := false
	if p.i < len(s) && s[p.i] == '-' {
		neg = true
		p.i++
	}
	intStart := p.i
	for p.i < len(s) && isDigit(s[p.i]) {
		p.i++
	}
	intPart := s[intStart:p.i]
	var frac string
	if p.i < len(s) && s[p.i] == '.' {
		p.i++
		fs := p.i
		for p.i < len(s) && isDigit(s[p.i]) {
			p.i++
		}
		frac = s[fs:p.i]
	}
	if intPart == "" && frac == "" {
		return p.errorf("invalid number")
	}
	var exp string
	if p.i < len(s) && (s[p.i] == 'e' || s[p.i] == 'E') {
		es := p.i
		p.i++
		if p.i < len(s) && (s[p.i] == '+' || s[p.i] == '-') {
			p.i++
		}
		ds := p.i
		for p.i < len(s) && isDigit(s[p.i]) {
			p.i++
		}
		if ds == p.i {
			return p.errorf("invalid number exponent")
		}
		exp = s[es:p.i]
	}
	if p.i < len(s) && (isIdentStart(s[p.i]) || isDigit(s[p.i]) || s[p.i] == '.') {
		return p.errorf("invalid number")
	}
	intPart = strings.TrimLeft(intPart, "0")
	if intPart == "" {
		intPart = "0"
	}
	if neg {
		p.out = append(p.out, '-')
	}
	p.out = append(p.out, intPart...)
	if frac != "" {
		p.out = append(p.out, '.')
		p.out = append(p.out, frac...)
	}
	p.out = append(p.out, exp...)
	return nil
}

// word reads a bare literal: true, false and null in any case, Python's
// True/False/None, and undefined/nil as null.
func (p *lenientParser) word() error {
	start := p.i
	for p.i < len(p.s) && (isIdentStart(p.s[p.i]) || isDigit(p.s[p.i])) {
		p.i++
	}
	w := p.s[start:p.i]
	switch strings.ToLower(w) {
	case "true":
		p.out = append(p.out, "true"...)
	case "false":
		p.out = append(p.out, "false"...)
	case "null", "none", "nil", "undefined":
		p.out = append(p.out, "null"...)
	default:
		p.i = start
		return p.errorf("unexpected word %q where a value should be", w)
	}
	return nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isIdentStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$'
}

// appendJSONString appends s as a strict JSON string: control characters
// escaped, invalid UTF-8 replaced by U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20 || c == 0x7f:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
