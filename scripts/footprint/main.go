// Command footprint shows where a Go program's bytes, start-up time and
// resident memory go, by module: the measurements behind research's start-up
// and size figures (docs/install.md).
//
//	footprint size BIN             code, read-only data and data by module (go tool nm -size;
//	                               BIN must not be stripped)
//	footprint init [-n N] BIN ARGS package init by package, the least of N runs of
//	                               BIN ARGS with GODEBUG=inittrace=1 (default 15)
//	footprint pages BIN ARGS       (Linux) the pages of BIN resident when BIN ARGS exits,
//	                               by section and module: a stopped process's
//	                               /proc/PID/pagemap, the process held at its exit
//	                               with ptrace (PTRACE_O_TRACEEXIT)
//
// The figures name modules (github.com/owner/repo, golang.org/x/name, the
// standard library by its first path element), which is the level a
// dependency is chosen or dropped at. Symbols the linker names without a
// package (go:func.* closures' data, the pclntab) are shown as such.
//
// Why resident pages and not only bytes: a Go binary's code and read-only
// data are mapped from the file, and a page fault maps the neighbouring
// cached pages too (the kernel's fault-around, 64 KiB), so a process's RSS
// is mostly its binary's pages that some code touched — package init spread
// over many packages touches many.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "footprint:", err)
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) < 2 {
		return errors.New("usage: footprint size BIN | footprint init [-n N] BIN ARGS... | footprint pages BIN ARGS...")
	}
	switch args[0] {
	case "size":
		syms, err := readSymbols(args[1])
		if err != nil {
			return err
		}
		secs, err := sections(args[1])
		if err != nil {
			return err
		}
		writeSizes(out, sizes(syms, secs))
		return nil
	case "init":
		fs := flag.NewFlagSet("init", flag.ContinueOnError)
		n := fs.Int("n", 15, "runs; each package's least init time is shown")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() < 1 || *n < 1 {
			return errors.New("usage: footprint init [-n N] BIN ARGS...")
		}
		inits, err := initTimes(fs.Args(), *n)
		if err != nil {
			return err
		}
		writeInits(out, inits)
		return nil
	case "pages":
		return pages(args[1:], out)
	}
	return fmt.Errorf("unknown command %q: size, init or pages", args[0])
}

// symbol is one symbol of go tool nm -size: its address, size, kind
// (T text, R read-only data, D/B data) and module.
type symbol struct {
	addr, size uint64
	kind       byte
	module     string
}

// readSymbols runs go tool nm -size -sort address on bin.
func readSymbols(bin string) ([]symbol, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("go", "tool", "nm", "-size", "-sort", "address", bin)
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go tool nm %s: %v: %s", bin, err, bytes.TrimSpace(stderr.Bytes()))
	}
	syms := parseNM(b)
	if len(syms) == 0 {
		return nil, fmt.Errorf("%s has no symbols (built with -ldflags=-s?): measure an unstripped build", bin)
	}
	return syms, nil
}

// parseNM reads go tool nm -size output: "ADDR SIZE KIND NAME" lines;
// undefined (U) and empty symbols are left out.
func parseNM(b []byte) []symbol {
	var syms []symbol
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || len(f[2]) != 1 {
			continue
		}
		addr, err1 := strconv.ParseUint(f[0], 16, 64)
		size, err2 := strconv.ParseUint(f[1], 10, 64)
		kind := f[2][0] &^ 0x20 // upper case: t and T alike
		if err1 != nil || err2 != nil || size == 0 || kind == 'U' {
			continue
		}
		syms = append(syms, symbol{addr: addr, size: size, kind: kind, module: module(packageOf(strings.Join(f[3:], " ")))})
	}
	return syms
}

// packageOf is the import path of the package a symbol belongs to:
// "github.com/a/b/c.(*T).M" → "github.com/a/b/c", "type:*net/http.Client" →
// "net/http".
func packageOf(name string) string {
	if strings.HasPrefix(name, "go:func.") {
		return "(go:func.* function data)"
	}
	for _, p := range []string{"type:.eq.", "type:.hash.", "type:", "go:itab.", "go:link.", "go:string.", "go:"} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			name = rest
			break
		}
	}
	name = strings.TrimLeft(name, "*[]()")
	slash := strings.LastIndexByte(name, '/')
	if dot := strings.IndexByte(name[slash+1:], '.'); dot >= 0 {
		return name[:slash+1+dot]
	}
	return name
}

// module names the module of an import path at the level a dependency is
// chosen: github.com/owner/repo, golang.org/x/name, a host and one element
// (go.opentelemetry.io/otel), or the standard library's first element
// ("std:net"); the standard library's vendored copies are "std:vendor".
func module(pkg string) string {
	if strings.HasPrefix(pkg, "(") {
		return pkg
	}
	if strings.HasPrefix(pkg, "vendor/") {
		return "std:vendor"
	}
	parts := strings.Split(pkg, "/")
	if !strings.Contains(parts[0], ".") {
		return "std:" + parts[0]
	}
	n := 2
	switch parts[0] {
	case "github.com", "codeberg.org", "gitlab.com", "golang.org", "go.yaml.in", "gopkg.in":
		n = 3
	}
	return strings.Join(parts[:min(n, len(parts))], "/")
}

// moduleSize is what one module puts in the binary.
type moduleSize struct {
	module              string
	text, rodata, data  uint64
	bss                 uint64 // not in the file
	total, functionsNum int
}

// sizes sums symbols by module, largest in the file first; a symbol in a
// section that is not in the file (go tool nm calls .noptrbss's symbols D)
// counts as bss.
func sizes(syms []symbol, secs []section) []moduleSize {
	by := map[string]*moduleSize{}
	for _, s := range syms {
		m := by[s.module]
		if m == nil {
			m = &moduleSize{module: s.module}
			by[s.module] = m
		}
		kind := s.kind
		if i := sort.Search(len(secs), func(i int) bool { return secs[i].hi > s.addr }); i < len(secs) && secs[i].lo <= s.addr && secs[i].fileless {
			kind = 'B'
		}
		switch kind {
		case 'T':
			m.text += s.size
			m.functionsNum++
		case 'R':
			m.rodata += s.size
		case 'D':
			m.data += s.size
		case 'B':
			m.bss += s.size
		}
	}
	out := make([]moduleSize, 0, len(by))
	for _, m := range by {
		m.total = int(m.text + m.rodata + m.data)
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b moduleSize) int {
		return cmp.Or(cmp.Compare(b.total, a.total), strings.Compare(a.module, b.module))
	})
	return out
}

func writeSizes(w io.Writer, ms []moduleSize) {
	var text, ro, data uint64
	for _, m := range ms {
		text, ro, data = text+m.text, ro+m.rodata, data+m.data
	}
	fmt.Fprintf(w, "%8s %8s %8s %8s %6s  %s\n", "MB", "text", "rodata", "data", "funcs", "module")
	for _, m := range ms {
		if m.total < 20_000 {
			continue
		}
		fmt.Fprintf(w, "%8.2f %8.2f %8.2f %8.2f %6d  %s\n", mb(uint64(m.total)), mb(m.text), mb(m.rodata), mb(m.data), m.functionsNum, m.module)
	}
	fmt.Fprintf(w, "%8.2f %8.2f %8.2f %8.2f %6s  all symbols (modules under 0.02 MB not listed; the pclntab, about as large as the text, is not a symbol)\n",
		mb(text+ro+data), mb(text), mb(ro), mb(data), "")
}

func mb(n uint64) float64 { return float64(n) / 1e6 }

// initTime is one package's init: its least clock time over the runs, and
// its allocations.
type initTime struct {
	pkg           string
	ms            float64
	bytes, allocs int64
}

// initTimes runs cmd n times with GODEBUG=inittrace=1 (its stdout
// discarded) and keeps each package's least time: the runs on a busy
// machine differ by what else ran, the least is the package's own cost.
func initTimes(cmd []string, n int) ([]initTime, error) {
	best := map[string]initTime{}
	for range n {
		c := exec.Command(cmd[0], cmd[1:]...)
		c.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var stderr bytes.Buffer
		c.Stderr = &stderr
		// The program's own failure is its business: its init ran.
		_ = c.Run()
		got := parseInitTrace(stderr.Bytes())
		if len(got) == 0 {
			return nil, fmt.Errorf("%s printed no init trace (not a Go program, or GODEBUG overridden): %s", cmd[0], firstLine(stderr.String()))
		}
		for _, t := range got {
			if b, ok := best[t.pkg]; !ok || t.ms < b.ms {
				best[t.pkg] = t
			}
		}
	}
	out := make([]initTime, 0, len(best))
	for _, t := range best {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b initTime) int {
		return cmp.Or(cmp.Compare(b.ms, a.ms), strings.Compare(a.pkg, b.pkg))
	})
	return out, nil
}

// parseInitTrace reads the runtime's lines
// "init PKG @0.5 ms, 0.01 ms clock, 128 bytes, 3 allocs".
func parseInitTrace(b []byte) []initTime {
	var out []initTime
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(strings.ReplaceAll(line, ",", ""))
		// init PKG @T ms CLOCK ms clock BYTES bytes ALLOCS allocs
		if len(f) != 11 || f[0] != "init" || f[5] != "ms" || f[6] != "clock" || f[8] != "bytes" || f[10] != "allocs" {
			continue
		}
		ms, err1 := strconv.ParseFloat(f[4], 64)
		by, err2 := strconv.ParseInt(f[7], 10, 64)
		al, err3 := strconv.ParseInt(f[9], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, initTime{pkg: f[1], ms: ms, bytes: by, allocs: al})
	}
	return out
}

func writeInits(w io.Writer, ts []initTime) {
	var ms float64
	var by, al int64
	byModule := map[string]float64{}
	for _, t := range ts {
		ms, by, al = ms+t.ms, by+t.bytes, al+t.allocs
		byModule[module(t.pkg)] += t.ms
	}
	fmt.Fprintf(w, "%8.2f ms %9d B %7d allocs  all packages (sum of each package's least)\n", ms, by, al)
	fmt.Fprintln(w, "by module:")
	mods := make([]string, 0, len(byModule))
	for m := range byModule {
		mods = append(mods, m)
	}
	slices.SortFunc(mods, func(a, b string) int { return cmp.Or(cmp.Compare(byModule[b], byModule[a]), strings.Compare(a, b)) })
	for _, m := range mods[:min(25, len(mods))] {
		fmt.Fprintf(w, "%8.2f ms  %s\n", byModule[m], m)
	}
	fmt.Fprintln(w, "by package:")
	for _, t := range ts[:min(40, len(ts))] {
		fmt.Fprintf(w, "%8.2f ms %9d B %7d allocs  %s\n", t.ms, t.bytes, t.allocs, t.pkg)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// section is an allocated ELF section: its name and address range.
type section struct {
	name     string
	lo, hi   uint64
	fileless bool // .bss, .noptrbss: not in the file
}

func sections(bin string) ([]section, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []section
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Size == 0 {
			continue
		}
		out = append(out, section{name: s.Name, lo: s.Addr, hi: s.Addr + s.Size, fileless: s.Type == elf.SHT_NOBITS})
	}
	slices.SortFunc(out, func(a, b section) int { return cmp.Compare(a.lo, b.lo) })
	return out, nil
}
