// Package docs holds the project's documentation pages; its test keeps
// them and the README honest: every relative link and image resolves, every
// #anchor names a heading, and the README stays short with its quick start
// on the first screen.
package docs

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pages are the Markdown files checked: the README and every page here.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("*.md")
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	return append([]string{filepath.Join("..", "README.md")}, docs...)
}

var (
	codeSpan = regexp.MustCompile("`[^`]*`")
	link     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	notSlug  = regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
)

// slug is GitHub's anchor for a heading: lower case, punctuation (code
// marks included) dropped, spaces made hyphens.
func slug(h string) string {
	s := strings.ToLower(strings.TrimSpace(h))
	s = notSlug.ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}

// page is what the check needs of a Markdown file.
type page struct {
	lines   []string // outside fenced code blocks; "" for lines inside them
	anchors map[string]bool
}

func read(t *testing.T, path string) page {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	p := page{anchors: map[string]bool{}}
	seen := map[string]int{}
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			p.lines = append(p.lines, "")
			continue
		}
		if fenced {
			p.lines = append(p.lines, "")
			continue
		}
		p.lines = append(p.lines, line)
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[1])
			if n := seen[s]; n > 0 {
				p.anchors[s+"-"+strconv.Itoa(n)] = true
			} else {
				p.anchors[s] = true
			}
			seen[s]++
		}
	}
	require.NoError(t, sc.Err())
	require.False(t, fenced, "%s: a code block is not closed", path)
	return p
}

// TestLinksResolve: every link and image of the README and of docs/ that
// points into the repository names a file that exists, and every #anchor a
// heading of the page it points to. Links inside code are not links.
func TestLinksResolve(t *testing.T) {
	cache := map[string]page{}
	get := func(path string) page {
		if p, ok := cache[path]; ok {
			return p
		}
		p := read(t, path)
		cache[path] = p
		return p
	}
	checked := 0
	for _, path := range pages(t) {
		p := get(path)
		for i, line := range p.lines {
			line = codeSpan.ReplaceAllString(line, "")
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, anchor, _ := strings.Cut(target, "#")
				dest := path
				if file != "" {
					dest = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %q: %s does not exist", path, i+1, target, dest)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s:%d: link %q: an anchor into a file that is not Markdown", path, i+1, target)
					continue
				}
				if !get(dest).anchors[anchor] {
					t.Errorf("%s:%d: link %q: %s has no heading #%s", path, i+1, target, dest, anchor)
				}
			}
		}
	}
	assert.Greater(t, checked, 20, "the link pattern found almost no relative links: is it broken?")
}

// TestSlug: the anchors GitHub gives the headings these pages use.
func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Quick start": "quick-start",
		"`research serve`: the HTTP API and the web page": "research-serve-the-http-api-and-the-web-page",
		"Setup: models":                               "setup-models",
		"What the first build costs":                  "what-the-first-build-costs",
		"From Go: any graph on Temporal":              "from-go-any-graph-on-temporal",
		"Agents, flows and the server are traced too": "agents-flows-and-the-server-are-traced-too",
	} {
		assert.Equal(t, want, slug(h), h)
	}
}

// TestREADMEShape: the README is read by newcomers first. It stays under
// 400 lines, shows a picture of a run on its first screen, and its quick
// start begins within the first 60 lines.
func TestREADMEShape(t *testing.T) {
	readme := read(t, filepath.Join("..", "README.md"))
	assert.Less(t, len(readme.lines), 400, "README.md has %d lines: move reference material to docs/", len(readme.lines))
	quick, picture := -1, -1
	for i, line := range readme.lines {
		if quick < 0 && strings.HasPrefix(line, "## Quick start") {
			quick = i + 1
		}
		if picture < 0 && strings.HasPrefix(line, "![") {
			picture = i + 1
		}
	}
	require.Positive(t, quick, "README.md has no \"## Quick start\" section")
	assert.LessOrEqual(t, quick, 60, "README.md's quick start starts at line %d", quick)
	require.Positive(t, picture, "README.md shows no picture")
	assert.Less(t, picture, quick, "README.md's picture of a run comes after its quick start")
}
