package main

import (
	"regexp"
	"strings"
	"sync"
)

// Terminal styles (SGR).
const (
	sgrReset     = "\x1b[0m"
	sgrBold      = "\x1b[1m"
	sgrDim       = "\x1b[2m"
	sgrItalic    = "\x1b[3m"
	sgrUnderline = "\x1b[4m"
	sgrCyan      = "\x1b[36m"
	sgrBlue      = "\x1b[34m"
)

var (
	headingRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`) })
	bulletRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*)[-*+]\s+(.*)$`) })
	orderedRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*)(\d{1,9})[.)]\s+(.*)$`) })
	ruleRe    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s{0,3}([-*_])(\s*[-*_]){2,}\s*$`) })
	// sourceRe is an entry of the Sources list: "3. [Title](url)".
	sourceRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(\d{1,9})\.\s+\[(.*)\]\((?:<([^<>\n]+)>|([^\s<>]+))\)\s*$`)
	})
)

// renderMarkdown renders a report for a terminal: headings and emphasis in
// bold and italics, numbered citations as coloured [n], other links as
// their text, the Sources list as numbered titles with the URL beneath, and
// code dimmed and left as written. md has been through cleanText, so every
// escape sequence in the result is ours.
func renderMarkdown(md string) string {
	var b strings.Builder
	inCode, fence, inSources := false, "", false
	for _, line := range strings.Split(strings.TrimRight(md, "\n"), "\n") {
		trimmed := strings.TrimSpace(line)
		if inCode {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				inCode = false
				continue
			}
			b.WriteString("    " + sgrDim + line + sgrReset + "\n")
			continue
		}
		if f := codeFence(trimmed); f != "" {
			inCode, fence = true, f
			continue
		}
		switch m := headingRe().FindStringSubmatch(line); {
		case m != nil:
			style := sgrBold
			if len(m[1]) == 1 {
				style += sgrUnderline
			}
			inSources = len(m[1]) == 2 && m[2] == "Sources"
			b.WriteString(style + inlineStyled(m[2], style) + sgrReset + "\n")
		case inSources && sourceRe().MatchString(line):
			s := sourceRe().FindStringSubmatch(line)
			b.WriteString(s[1] + ". " + inline(s[2]) + "\n")
			b.WriteString(strings.Repeat(" ", len(s[1])+2) + sgrDim + s[3] + s[4] + sgrReset + "\n")
		case ruleRe().MatchString(line):
			b.WriteString(sgrDim + strings.Repeat("─", 40) + sgrReset + "\n")
		case strings.HasPrefix(trimmed, ">"):
			b.WriteString(sgrDim + "│ " + sgrReset + inline(strings.TrimSpace(strings.TrimPrefix(trimmed, ">"))) + "\n")
		default:
			if m := bulletRe().FindStringSubmatch(line); m != nil {
				b.WriteString(m[1] + "• " + inline(m[2]) + "\n")
			} else if m := orderedRe().FindStringSubmatch(line); m != nil {
				b.WriteString(m[1] + m[2] + ". " + inline(m[3]) + "\n")
			} else {
				b.WriteString(inline(line) + "\n")
			}
		}
	}
	return b.String()
}

// codeFence returns the fence a line opens (``` or ~~~, or longer), or "".
func codeFence(trimmed string) string {
	for _, c := range []string{"`", "~"} {
		n := len(trimmed) - len(strings.TrimLeft(trimmed, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// inline renders the spans of one line.
func inline(s string) string { return inlineStyled(s, "") }

// inlineStyled renders the spans of s inside the style base (a heading's
// bold), which every reset restores.
func inlineStyled(s, base string) string {
	var b strings.Builder
	bold, italic := false, false
	restyle := func() {
		b.WriteString(sgrReset + base)
		if bold {
			b.WriteString(sgrBold)
		}
		if italic {
			b.WriteString(sgrItalic)
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && isMarkdownPunct(s[i+1]):
			b.WriteByte(s[i+1])
			i += 2
		case c == '`':
			n := len(s[i:]) - len(strings.TrimLeft(s[i:], "`"))
			ticks := s[i : i+n]
			end := strings.Index(s[i+n:], ticks)
			if end < 0 {
				b.WriteString(ticks)
				i += n
				continue
			}
			b.WriteString(sgrCyan + strings.TrimSpace(s[i+n:i+n+end]))
			restyle()
			i += n + end + n
		case c == '[':
			text, url, n := parseLink(s[i:])
			if n == 0 {
				b.WriteByte(c)
				i++
				continue
			}
			if isCitationNumber(text) {
				b.WriteString(sgrBlue + "[" + text + "]")
			} else {
				b.WriteString(sgrUnderline + inlineStyled(text, base+sgrUnderline))
				if url != text {
					restyle()
					b.WriteString(" " + sgrDim + "(" + url + ")")
				}
			}
			restyle()
			i += n
		case (c == '*' || c == '_') && strings.HasPrefix(s[i:], strings.Repeat(string(c), 2)):
			if !bold && !strings.Contains(s[i+2:], s[i:i+2]) {
				b.WriteString(s[i : i+2])
				i += 2
				continue
			}
			bold = !bold
			restyle()
			i += 2
		case c == '*' && (italic || i+1 < len(s) && s[i+1] != ' ' && strings.IndexByte(s[i+1:], '*') > 0):
			italic = !italic
			restyle()
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	if bold || italic {
		b.WriteString(sgrReset + base)
	}
	return b.String()
}

// parseLink reads "[text](url)" at the start of s and returns its text,
// URL and length, or n == 0 when s does not start with a link.
func parseLink(s string) (text, url string, n int) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '[':
			depth++
		case ']':
			if depth--; depth > 0 {
				continue
			}
			rest := s[i+1:]
			if !strings.HasPrefix(rest, "(") {
				return "", "", 0
			}
			if strings.HasPrefix(rest, "(<") { // <destination with spaces>
				end := strings.Index(rest, ">)")
				if end < 0 || strings.ContainsAny(rest[2:end], "<>\n") {
					return "", "", 0
				}
				return s[1:i], rest[2:end], i + 1 + end + 2
			}
			end := strings.IndexByte(rest, ')')
			if end < 0 || strings.ContainsAny(rest[1:end], " \t<>") {
				return "", "", 0
			}
			return s[1:i], rest[1:end], i + 1 + end + 1
		}
	}
	return "", "", 0
}

func isCitationNumber(s string) bool {
	if s == "" || len(s) > 4 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func isMarkdownPunct(c byte) bool { return strings.IndexByte("\\`*_{}[]()#+-.!|<>~", c) >= 0 }
