package nodes

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestExpectedFiles(t *testing.T) {
	for task, want := range map[string][]string{
		"Write notes.md": {"notes.md"},
		"Find what changed in Go 1.22 and write notes.md":  {"notes.md"},
		"Save the results to out/data.csv and `report.md`": {"out/data.csv", "report.md"},
		"Create a file with the first ten primes":          {anyFile},
		"What is Go?":                                     nil,
		"Write a summary of golang.org":                   nil,
		"Summarise https://example.com/notes.md":          nil,
		"Write a summary of https://example.com/notes.md": nil,
		"Read data.csv and tell me its mean":              nil,
	} {
		assert.Equal(t, want, expectedFiles(task), task)
	}
}

func TestPromisedFiles(t *testing.T) {
	assert.Equal(t, []string{"notes.md"}, promisedFiles("Done: I saved the notes to notes.md."))
	assert.Equal(t, []string{"out/a.csv"}, promisedFiles("The table is written to `out/a.csv`."))
	assert.Empty(t, promisedFiles("Go 1.22 changed loop variables; see https://go.dev/blog/loopvar-preview.html"))
	assert.Empty(t, promisedFiles("Here are the notes."))
}

func TestMissingFiles(t *testing.T) {
	listing := []workspaceFile{{"notes.md", 12}, {"out/data.csv", 0}, {"sub/report.md", 5}}
	assert.Empty(t, missingFiles([]string{"notes.md", "./notes.md", "report.md", anyFile}, listing))
	assert.Equal(t, []string{"out/data.csv", "todo.txt"}, missingFiles([]string{"out/data.csv", "todo.txt"}, listing), "empty or absent")
}
