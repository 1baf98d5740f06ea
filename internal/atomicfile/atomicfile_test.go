package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/deepgraph/deepgraph/internal/atomicfile"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	if err := atomicfile.Write(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(p, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "two" {
		t.Fatalf("read %q, %v; want two", got, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the directory, want 1: no temporary file is left", len(entries))
	}
	if err := atomicfile.Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Error("a missing directory is an error")
	}
}
