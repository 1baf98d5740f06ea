package server

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The page's Markdown renderer has its own tests, in JavaScript: the tree
// it builds from ordinary and hostile Markdown (only http and https links,
// images and raw HTML as text), and the growth of its work on pathological
// input (counted, not timed). They run with Node where it is installed.
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

// BenchmarkMarkdownRenderer times the page's Markdown parser on its
// pathological inputs (web/markdown.cases.mjs) at 100 KB and 1 MB, in Node,
// and reports per shape the milliseconds of the 1 MB input and the growth
// (time of 1 MB / time of 100 KB: 10 for linear work), in CPU time. It
// skips without node.
func BenchmarkMarkdownRenderer(b *testing.B) {
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("node is not installed: the page's Markdown benchmark (web/markdown.bench.mjs) skips")
	}
	for b.Loop() {
		out, err := exec.Command(node, filepath.Join("web", "markdown.bench.mjs"), "100000").Output()
		if err != nil {
			b.Fatalf("web/markdown.bench.mjs: %v", err)
		}
		var shapes map[string]struct{ MS, Growth float64 }
		if err := json.Unmarshal(out, &shapes); err != nil {
			b.Fatalf("web/markdown.bench.mjs printed %q: %v", out, err)
		}
		for name, s := range shapes {
			unit := strings.ReplaceAll(name, " ", "-")
			b.ReportMetric(s.MS, unit+"-ms/MB")
			b.ReportMetric(s.Growth, unit+"-growth")
		}
	}
}
