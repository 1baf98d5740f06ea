package citation

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileCases are the Markdown cases shared with the page's renderer
// tests (internal/server): the issue 23 cases and the constructs a
// renderer links.
type hostileCases struct {
	Gathered []Source `json:"gathered"`
	Cases    []struct {
		Name     string `json:"name"`
		Markdown string `json:"markdown"`
	} `json:"cases"`
}

func loadHostile(t testing.TB) hostileCases {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "hostile-markdown.json"))
	require.NoError(t, err)
	var h hostileCases
	require.NoError(t, json.Unmarshal(b, &h))
	require.NotEmpty(t, h.Cases)
	return h
}

// TestFinalizeRenderedHostile: for every shared case, no link a CommonMark
// + GFM renderer (goldmark) would show in Finalize's output leads to a page
// not gathered, and the output is a fixed point.
func TestFinalizeRenderedHostile(t *testing.T) {
	h := loadHostile(t)
	for _, c := range h.Cases {
		t.Run(c.Name, func(t *testing.T) {
			// Before: the case itself has foreign links (the check is not
			// vacuous) unless it is only about words.
			got := Finalize(c.Markdown, h.Gathered)
			assert.Empty(t, foreignLinks(got.Text, h.Gathered), "in %q", got.Text)
			again := Finalize(got.Text, h.Gathered)
			assert.Equal(t, got.Text, again.Text)
			assert.Zero(t, again.Dropped)
		})
	}
}

// TestCheckRenderedSees: the checker itself finds each kind of foreign
// link, so that an empty answer from it means something.
func TestCheckRenderedSees(t *testing.T) {
	ix := newIndex(issue23Gathered)
	for _, in := range []string{
		"See [docs\\]](https:evil.example) now.",
		"Click [here][1].\n\n[1]: //evil.example/x\n",
		"[1]: https&#58;//evil.example/x\n",
		"Go to _www.evil.example_ now.",
		"<https://evil.example/>",
		`<a href="https://evil.example/">x</a>`,
		"<div>\n<img src=x>\n</div>",
		"![p](https://evil.example/p.png)",
	} {
		assert.NotEmpty(t, checkRendered(in, ix), in)
	}
	for _, in := range []string{
		"Fact [1](" + uefaURL + ").",
		"Fact [1](" + wikiURL + ").",
		"Mail me@example.com, <br> and <sup>2</sup>.",
		"`[x](https://evil.example/)`",
	} {
		assert.Empty(t, checkRendered(in, ix), in)
	}
}

// FuzzFinalizeRendered asserts the guard's property on random Markdown:
// what goldmark (CommonMark + GFM) would link in Finalize's output always
// resolves to a gathered source, and the output is a fixed point.
func FuzzFinalizeRendered(f *testing.F) {
	h := loadHostile(f)
	for _, c := range h.Cases {
		f.Add(c.Markdown)
	}
	ix := newIndex(h.Gathered)
	f.Fuzz(func(t *testing.T, answer string) {
		res := Finalize(answer, h.Gathered)
		assert.Empty(t, checkRendered(res.Text, ix), "foreign link in %q", res.Text)
		again := Finalize(res.Text, h.Gathered)
		assert.Equal(t, res.Text, again.Text)
		assert.Zero(t, again.Dropped)
	})
}
