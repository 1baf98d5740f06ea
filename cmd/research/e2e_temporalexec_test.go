//go:build !temporal && unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// research hands research on Temporal to research-temporal: these run the
// program from a directory of its own, with or without a stand-in
// research-temporal next to it (the real one is e2e_temporal_test's).

// aloneBinary is the program linked into a fresh directory as research.
func aloneBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), programName)
	require.NoError(t, os.Symlink(self, bin))
	return bin
}

func TestTemporalProgramMissing(t *testing.T) {
	bin := aloneBinary(t)
	// A PATH without research-temporal on it.
	envv := env(t, map[string]string{"PATH": t.TempDir()})
	for _, args := range [][]string{
		{"worker", "--temporal", "localhost:7233"},
		{"batch", "q.txt", "--temporal", "localhost:7233", "--out", "reports"},
		{"--temporal", "localhost:7233", "What is Raft?"},
	} {
		res := runBin(t, bin, envv, "", args...)
		assert.Equal(t, exitUsage, res.code, "%v: %s", args, res)
		assert.Contains(t, res.stderr, "research-temporal not found next to research ("+filepath.Dir(bin)+") or on PATH", args)
		assert.Contains(t, res.stderr, "go build -tags temporal -o "+filepath.Join(filepath.Dir(bin), "research-temporal")+" ./cmd/research", args)
		assert.Contains(t, res.stderr, "docs/temporal.md", args)
	}
	// Its help is there without it.
	res := runBin(t, bin, envv, "", "worker", "--help")
	assert.Contains(t, res.stdout, "worker connects to a Temporal server", res)
	assert.Contains(t, res.stderr, "research-temporal not found", res)
	res = runBin(t, bin, envv, "", "help", "batch")
	assert.Equal(t, 0, res.code, res)
	assert.Contains(t, res.stdout, "batch submits one research run per line of FILE", res)
}

func TestTemporalProgramHandedOver(t *testing.T) {
	bin := aloneBinary(t)
	dir := filepath.Dir(bin)
	// A stand-in that shows what it was given, reads stdin, and exits 3.
	stub := "#!/bin/sh\necho \"args:$*\"\necho \"env:$DEEPGRAPH_MARK\"\necho \"stdin:$(cat)\"\necho oops >&2\nexit 3\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "research-temporal"), []byte(stub), 0o755))
	envv := env(t, map[string]string{"DEEPGRAPH_MARK": "m1"})
	for _, args := range [][]string{
		{"worker", "--temporal", "localhost:7233", "--concurrency", "4"},
		{"--config", "c.yaml", "batch", "-", "--temporal", "localhost:7233", "--out", "r"},
		{"--temporal", "localhost:7233", "--effort", "low"},
		{"help", "worker"},
	} {
		res := runWith(t, bin, strings.NewReader("What is Raft?"), envv, "", args...)
		assert.Equal(t, 3, res.code, "%v: %s", args, res)
		assert.Equal(t, "args:"+strings.Join(args, " ")+"\nenv:m1\nstdin:What is Raft?\n", res.stdout, args)
		assert.Equal(t, "oops\n", res.stderr, args)
	}
}
