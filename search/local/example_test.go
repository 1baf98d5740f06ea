package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/search/local"
)

func Example() {
	// A corpus of one Markdown file; the index goes to its own cache
	// directory (by default it lives under os.UserCacheDir()).
	corpus, _ := os.MkdirTemp("", "corpus")
	defer func() { _ = os.RemoveAll(corpus) }()
	cache, _ := os.MkdirTemp("", "cache")
	defer func() { _ = os.RemoveAll(cache) }()
	doc := "# Design\n\nAn overview.\n\n## Checkpoints\n\nA run resumes from its last checkpoint,\nwhich is stored in SQLite.\n"
	_ = os.WriteFile(filepath.Join(corpus, "design.md"), []byte(doc), 0o644)

	ctx := context.Background()
	ix, err := local.Open(ctx, corpus, local.WithCacheDir(cache))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = ix.Close() }()
	fmt.Println("indexed files:", ix.LastRefresh().Indexed)

	results, err := ix.Search(ctx, "How does a run resume?", search.Options{MaxResults: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		loc, _ := local.ParseLocation(r.URL)
		fmt.Printf("%s  %s lines %d-%d\n", r.Title, filepath.Base(loc.Path), loc.StartLine, loc.EndLine)
		fmt.Println(r.Snippet)
	}
	// Output:
	// indexed files: 1
	// Design › Checkpoints  design.md lines 5-8
	// ## Checkpoints A run resumes from its last checkpoint, which is stored in SQLite.
}

func ExampleParseLocation() {
	loc, err := local.ParseLocation("file:///home/me/notes/design.md#L5-L8")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(filepath.ToSlash(loc.Path), loc.StartLine, loc.EndLine)
	// Output: /home/me/notes/design.md 5 8
}

func ExampleLocation_URL() {
	loc := local.Location{Path: "/home/me/my notes/a.md", StartLine: 10, EndLine: 24}
	fmt.Println(loc.URL())
	fmt.Println(loc)
	// Output:
	// file:///home/me/my%20notes/a.md#L10-L24
	// /home/me/my notes/a.md:10-24
}
