package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// plainOf removes our SGR sequences, leaving the text a terminal shows.
func plainOf(s string) string {
	for _, c := range []string{sgrReset, sgrBold, sgrDim, sgrItalic, sgrUnderline, sgrCyan, sgrBlue} {
		s = strings.ReplaceAll(s, c, "")
	}
	return s
}

func TestRenderMarkdown(t *testing.T) {
	md := "# Raft\n\n" +
		"Raft elects a **leader** by *randomised* timeouts [1](https://raft.github.io/) and [the paper](https://example.org/raft.pdf); see `electionTimeout` \\[sic\\].\n\n" +
		"- terms only grow\n  - nested\n1. first\n\n" +
		"> quoted\n\n" +
		"```go\nfunc main() { x := a**b }\n```\n\n" +
		"snake_case_name stays, a lone * too\n\n" +
		"## Sources\n\n" +
		"1. [In Search of an Understandable \\[Consensus\\] Algorithm](https://raft.github.io/raft.pdf)\n" +
		"2. [raft.github.io](<https://raft.github.io/a b>)\n"
	got := renderMarkdown(md)
	plain := plainOf(got)
	for _, line := range []string{
		"Raft elects a leader by randomised timeouts [1] and the paper (https://example.org/raft.pdf); see electionTimeout [sic].",
		"• terms only grow", "  • nested", "1. first", "│ quoted", "    func main() { x := a**b }",
		"snake_case_name stays, a lone * too",
		"1. In Search of an Understandable [Consensus] Algorithm", "   https://raft.github.io/raft.pdf",
		"2. raft.github.io", "   https://raft.github.io/a b",
	} {
		assert.Contains(t, strings.Split(plain, "\n"), line, "rendered:\n%s", plain)
	}
	assert.NotContains(t, plain, "](", "no link syntax is left")
	assert.NotContains(t, plain, "**leader**")
	assert.Contains(t, got, sgrBold+"leader", "bold is bold")
	assert.Contains(t, got, sgrItalic+"randomised")
	assert.Contains(t, got, sgrBlue+"[1]", "citations stand out")
	assert.Contains(t, got, sgrBold+sgrUnderline+"Raft", "the title")
	for _, l := range strings.Split(got, "\n") {
		if strings.Contains(l, "\x1b[") {
			assert.True(t, strings.HasPrefix(l[strings.LastIndex(l, "\x1b["):], sgrReset), "every styled line ends reset: %q", l)
		}
	}
}

// On a terminal the report is rendered after a blank line; piped, to a
// file or with NO_COLOR it is the Markdown as written.
func TestOutputMarkdown(t *testing.T) {
	const md = "Answer with **bold** [1](https://a.example/).\n\n## Sources\n\n1. [A](https://a.example/)\n"
	for _, tc := range []struct {
		name         string
		tty, noColor bool
		rendered     bool
	}{
		{"piped", false, false, false},
		{"terminal", true, false, true},
		{"terminal with NO_COLOR", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			c := &cli{stdout: &out, stdoutTTY: tc.tty, noColor: tc.noColor}
			assert.NoError(t, c.outputMarkdown(md+"\x1b[2Jevil\n"))
			if tc.rendered {
				assert.True(t, strings.HasPrefix(out.String(), "\n"), "a blank line parts it from the timeline")
				assert.Contains(t, plainOf(out.String()), "Answer with bold [1].")
			} else {
				assert.Equal(t, md+"[2Jevil\n", out.String())
			}
			assert.NotContains(t, out.String(), "\x1b[2J", "the report's own escapes never reach the terminal")
		})
	}
}
