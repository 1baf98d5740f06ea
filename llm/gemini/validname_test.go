package gemini

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// toolNameRE is the rule validToolName implements, kept here as its oracle.
var toolNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:\-]{0,127}$`)

func TestValidToolName(t *testing.T) {
	names := []string{
		"", "a", "_", "Z", "9", "9 lives", "-x", ".x", ":x", "web_search", "files.read_text_file",
		"ns:tool-1.2", "a b", "a\n", "a\nb", "ümlaut", "a/b", "a$", "tool()", "x\x00",
		strings.Repeat("a", 127), strings.Repeat("a", 128), strings.Repeat("a", 129),
		"_" + strings.Repeat("9", 127), "_" + strings.Repeat("9", 128),
	}
	for _, n := range names {
		assert.Equal(t, toolNameRE.MatchString(n), validToolName(n), "%q", n)
	}
}

func FuzzValidToolName(f *testing.F) {
	for _, s := range []string{"a", "9a", "a-b.c:d", strings.Repeat("x", 128), "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, n string) {
		if toolNameRE.MatchString(n) != validToolName(n) {
			t.Fatalf("validToolName(%q) = %v, the rule says %v", n, validToolName(n), toolNameRE.MatchString(n))
		}
	})
}
