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

func TestWriteIn(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteIn(root, "sub/f.txt", []byte("one"), 0o640); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "sub/f.txt")); string(got) != "one" {
		t.Fatalf("read %q, want one", got)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "sub/f.txt")); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 exactly", fi.Mode().Perm())
	}
	// A hard link and a symbolic link at the name are replaced, not written through.
	target := filepath.Join(outside, "t.txt")
	if err := os.WriteFile(target, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, link := range []func(string, string) error{os.Link, os.Symlink} {
		p := filepath.Join(dir, "sub/link.txt")
		_ = os.Remove(p)
		if err := link(target, p); err != nil {
			t.Fatal(err)
		}
		if err := atomicfile.WriteIn(root, "sub/link.txt", []byte("inside"), 0o644); err != nil {
			t.Fatal(i, err)
		}
		if got, _ := os.ReadFile(target); string(got) != "outside" {
			t.Errorf("link %d: the outside file became %q", i, got)
		}
		if fi, _ := os.Lstat(p); !fi.Mode().IsRegular() {
			t.Errorf("link %d: the name holds %v, want a regular file", i, fi.Mode())
		}
	}
	// A directory that leads out is refused.
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteIn(root, "out/f.txt", []byte("x"), 0o644); err == nil {
		t.Error("a write through a link out of the root is refused")
	}
	if err := atomicfile.WriteIn(root, "../f.txt", []byte("x"), 0o644); err == nil {
		t.Error("a write above the root is refused")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("%d files outside, want 1: nothing was written there", len(entries))
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "sub")); len(entries) != 2 {
		t.Errorf("%d files in sub, want 2: no temporary file is left", len(entries))
	}
}
