package main

import (
	"bytes"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPackageOfAndModule(t *testing.T) {
	for _, tc := range []struct{ sym, pkg, module string }{
		{"github.com/openai/openai-go/v3.(*Client).Post", "github.com/openai/openai-go/v3", "github.com/openai/openai-go"},
		{"github.com/openai/openai-go/v3/packages/param.MarshalObject[go.shape.struct {}]", "github.com/openai/openai-go/v3/packages/param", "github.com/openai/openai-go"},
		{"type:*net/http.Client", "net/http", "std:net"},
		{"type:.eq.go.opentelemetry.io/otel/attribute.KeyValue", "go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel"},
		{"go:itab.*os.File,io.Reader", "os", "std:os"},
		{"vendor/golang.org/x/net/http2/hpack.init", "vendor/golang.org/x/net/http2/hpack", "std:vendor"},
		{"runtime.main", "runtime", "std:runtime"},
		{"codeberg.org/readeck/go-readability.init", "codeberg.org/readeck/go-readability", "codeberg.org/readeck/go-readability"},
		{"go:func.*", "(go:func.* function data)", "(go:func.* function data)"},
	} {
		pkg := packageOf(tc.sym)
		assert.Equal(t, tc.pkg, pkg, tc.sym)
		assert.Equal(t, tc.module, module(pkg), tc.sym)
	}
}

func TestParseNMAndSizes(t *testing.T) {
	nm := []byte(`                 0 U fputc
  401000        100 T runtime.main
  401100        300 t github.com/a/b/c.f
  401400          0 T github.com/a/b.empty
  500000         50 R type:*github.com/a/b.T
  600000         20 D github.com/a/b/c.v
  700000       4000 D github.com/a/b.buf
`)
	syms := parseNM(nm)
	require.Len(t, syms, 5, "U and empty symbols are left out")
	ms := sizes(syms, []section{{name: ".noptrbss", lo: 0x700000, hi: 0x800000, fileless: true}})
	require.Len(t, ms, 2)
	assert.Equal(t, moduleSize{module: "github.com/a/b", text: 300, rodata: 50, data: 20, bss: 4000, total: 370, functionsNum: 1}, ms[0])
	assert.Equal(t, "std:runtime", ms[1].module)
	var out bytes.Buffer
	writeSizes(&out, ms)
	assert.Contains(t, out.String(), "all symbols")
}

func TestParseInitTrace(t *testing.T) {
	trace := []byte("init internal/bytealg @0.007 ms, 0.004 ms clock, 0 bytes, 0 allocs\n" +
		"research devel\n" +
		"init github.com/yuin/goldmark/extension @138 ms, 21 ms clock, 264240 bytes, 2049 allocs\n")
	got := parseInitTrace(trace)
	require.Len(t, got, 2)
	assert.Equal(t, initTime{pkg: "github.com/yuin/goldmark/extension", ms: 21, bytes: 264240, allocs: 2049}, got[1])
}

// TestInitOfThisBinary runs this test binary (a Go program with package
// inits) and reads its init trace.
func TestInitOfThisBinary(t *testing.T) {
	ts, err := initTimes([]string{os.Args[0], "-test.list=^$"}, 2)
	require.NoError(t, err)
	var pkgs []string
	for _, x := range ts {
		pkgs = append(pkgs, x.pkg)
	}
	assert.Contains(t, pkgs, "testing")
}

// TestPagesOfThisBinary holds this test binary at its exit and finds its
// code resident.
func TestPagesOfThisBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pages reads /proc: Linux only")
	}
	if f, err := os.Open("/proc/self/pagemap"); err != nil {
		t.Skipf("no /proc/self/pagemap here: %v", err)
	} else {
		_ = f.Close()
	}
	var out bytes.Buffer
	err := run([]string{"pages", os.Args[0], "-test.list=^$"}, &out)
	if err != nil && strings.Contains(err.Error(), "ptrace") {
		t.Skipf("ptrace is not allowed here: %v", err)
	}
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^ +\d+ KiB of +\d+  \.text$`, out.String())
	// go test links its binaries stripped: no module is named.
	assert.Contains(t, out.String(), "(no symbol)")
}
