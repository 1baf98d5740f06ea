// Package fence puts untrusted text — tool output, web pages, the results
// of earlier steps — into an element of a prompt, <name attrs>…</name>,
// so that the text cannot end the element early or open another one.
//
// Every opening or closing tag of the fence's names in the text has its
// '<' written as "&lt;": all cases and spacings (</TOOL_OUTPUT>,
// </ tool_output >, < /tool_output>), '-', '_' or spaces between the
// name's words (</tool-output>), full-width brackets (＜/tool_output＞) and
// invisible spaces (no-break, zero-width). The rest of the text is kept as
// it is, so the model still reads what the tool said.
//
//	f := fence.New("tool_output")
//	prompt := f.Wrap(`tool="web_search" untrusted="true"`, output)
package fence

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Fence is an element that holds untrusted text.
type Fence struct {
	name string
	tags *regexp.Regexp
}

// New returns the fence of element name; the tags of also — the names of
// the other fences the text could meet in the same prompt — are
// neutralised too. Names are ASCII letters, digits and '_'; New panics on
// any other, as on a mistyped regular expression.
func New(name string, also ...string) *Fence {
	alts := make([]string, 0, 1+len(also))
	for _, n := range append([]string{name}, also...) {
		if n == "" || strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
			panic("fence: invalid element name " + n)
		}
		words := strings.FieldsFunc(n, func(r rune) bool { return r == '_' })
		alts = append(alts, strings.Join(words, sep+`*`))
	}
	return &Fence{name: name, tags: regexp.MustCompile(`(?i)[<＜﹤]` + space + `*/?` + space + `*(?:` + strings.Join(alts, "|") + `)\b`)}
}

// space is what a lenient reader may skip inside a tag: white space,
// no-break and zero-width spaces; sep adds what may join a name's words.
const (
	space = `[\s\p{Z}\x{200B}-\x{200D}\x{2060}\x{FEFF}]`
	sep   = `[\s\p{Z}\x{200B}-\x{200D}\x{2060}\x{FEFF}_-]`
)

// Escape returns text with the '<' of every tag of the fence's names
// written as "&lt;".
func (f *Fence) Escape(text string) string {
	return f.tags.ReplaceAllStringFunc(text, func(tag string) string {
		_, size := utf8.DecodeRuneInString(tag) // '<' or a full-width one
		return "&lt;" + tag[size:]
	})
}

// Wrap returns text, escaped, inside the fence's element with attrs (""
// for none), each tag on a line of its own.
func (f *Fence) Wrap(attrs, text string) string {
	open := "<" + f.name
	if attrs != "" {
		open += " " + attrs
	}
	return open + ">\n" + f.Escape(text) + "\n</" + f.name + ">"
}
