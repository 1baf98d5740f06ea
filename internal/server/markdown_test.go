package server

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// The page's Markdown renderer has its own tests, in JavaScript: the tree
// it builds from ordinary and hostile Markdown (only http and https links,
// images and raw HTML as text). They run with Node where it is installed.
func TestMarkdownRenderer(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the page's Markdown tests (web/markdown.test.mjs) skip")
	}
	out, err := exec.Command(node, filepath.Join("web", "markdown.test.mjs")).CombinedOutput()
	if err != nil {
		t.Fatalf("web/markdown.test.mjs failed: %v\n%s", err, out)
	}
}
