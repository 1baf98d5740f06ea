package server

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/research/citation"
)

// hostileMarkdown is the case list the citation package's tests share
// (research/citation/testdata/hostile-markdown.json).
type hostileMarkdown struct {
	Gathered []citation.Source `json:"gathered"`
	Cases    []struct {
		Name     string `json:"name"`
		Markdown string `json:"markdown"`
	} `json:"cases"`
}

// pageCase is one input of web/markdown.property.mjs.
type pageCase struct {
	Name     string   `json:"name"`
	Markdown string   `json:"markdown"`
	Allowed  []string `json:"allowed"`
}

// TestPageRendererLinksOnlyGathered is the page's half of the citation
// property of issue 23: what citation.Finalize writes — for the shared
// hostile cases and for random Markdown — rendered by the page's parser
// (web/markdown.js, in Node) links only to gathered sources. It skips
// without node.
func TestPageRendererLinksOnlyGathered(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the page's citation property test (web/markdown.property.mjs) skips")
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "research", "citation", "testdata", "hostile-markdown.json"))
	require.NoError(t, err)
	var h hostileMarkdown
	require.NoError(t, json.Unmarshal(b, &h))
	require.NotEmpty(t, h.Cases)

	var allowed []string
	for _, s := range h.Gathered {
		allowed = append(allowed, s.URL)
	}
	var cases []pageCase
	add := func(name, md string) {
		res := citation.Finalize(md, h.Gathered)
		cases = append(cases, pageCase{Name: name, Markdown: res.Text, Allowed: allowed})
	}
	for _, c := range h.Cases {
		add(c.Name, c.Markdown)
	}
	rng := rand.New(rand.NewPCG(23, 2026))
	for i := range 2000 {
		add("random "+string(rune('a'+i%26)), randomMarkdown(rng, h))
	}
	// The check is not vacuous: unfinalized, the cases do link elsewhere.
	raw := []pageCase{{Name: "raw", Markdown: "[x](https://evil.example/) https://evil.example/y", Allowed: allowed}}

	run := func(cases []pageCase) (string, error) {
		f := filepath.Join(t.TempDir(), "cases.json")
		data, err := json.Marshal(map[string][]pageCase{"cases": cases})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(f, data, 0o600))
		out, err := exec.Command(node, filepath.Join("web", "markdown.property.mjs"), f).CombinedOutput()
		return string(out), err
	}
	out, err := run(raw)
	require.Error(t, err, "the property script must see a foreign link: %s", out)
	out, err = run(cases)
	require.NoError(t, err, "foreign links on the page:\n%s", out)
	t.Log(strings.TrimSpace(out))
}

// randomMarkdown strings together pieces of Markdown that make links in
// one renderer or another, with the gathered sources' URLs among them.
func randomMarkdown(rng *rand.Rand, h hostileMarkdown) string {
	pieces := []string{
		"[", "]", "(", ")", "<", ">", "!", "\\", "`", "*", "_", "~", "\n", "\n\n", " ", "> ", "- ", "1. ", "    ", "|", ":", "#",
		"https://evil.example/", "http://evil.example", "//evil.example/", "https:evil.example", "www.evil.example", "https&#58;//evil.example",
		"&#104;ttps://evil.example", "me@evil.example", "javascript:alert(1)", "<a href=\"https://evil.example\">", "</a>", "<img src=x>",
		"[x](", "](", "][", "[1]: ", "[x][1]", "[S1]", "text", "words and more", "https://vertexaisearch.cloud.google.com/id/1-8",
		"https://vertexaisearch.cloud.google.com/id/9-9", "Sources:", "**Sources:**",
	}
	for _, s := range h.Gathered {
		pieces = append(pieces, s.URL)
	}
	var b strings.Builder
	for range 1 + rng.IntN(40) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}
