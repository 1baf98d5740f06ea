package main

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

const pageSize = 4096

// pages runs args[0] with args[1:] under ptrace, holds it at its exit
// (PTRACE_EVENT_EXIT: the threads are ending, the address space is still
// whole) and reports which pages of its binary, and how many anonymous
// ones, are resident then: the peak, for a program that does not free
// memory back before it exits.
func pages(args []string, out io.Writer) error {
	bin, err := exec.LookPath(args[0])
	if err != nil {
		return err
	}
	secs, err := sections(bin)
	if err != nil {
		return err
	}
	syms, err := readSymbols(bin)
	if err != nil {
		fmt.Fprintf(out, "by section only: %v\n", err) // a stripped binary
	}
	present, anon, err := residentAtExit(bin, args[1:])
	if err != nil {
		return err
	}
	writePages(out, attribute(present, secs, syms), anon)
	return nil
}

// residentAtExit starts bin and returns the addresses of the resident
// pages of its mappings of bin, and its resident anonymous KiB (heap,
// stacks, the Go heap's arenas), read when it exits.
func residentAtExit(bin string, args []string) (present []uint64, anonKiB uint64, err error) {
	// ptrace requests come from the thread that attached.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	pid := cmd.Process.Pid
	defer func() {
		if err != nil {
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	}()
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil { // stopped at exec
		return nil, 0, err
	}
	if err := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACEEXIT); err != nil {
		return nil, 0, fmt.Errorf("ptrace: %w", err)
	}
	sig := 0
	for {
		if err := syscall.PtraceCont(pid, sig); err != nil {
			return nil, 0, fmt.Errorf("ptrace: %w", err)
		}
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			return nil, 0, err
		}
		switch {
		case ws.Exited() || ws.Signaled():
			return nil, 0, errors.New("the program ended without stopping at its exit")
		case !ws.Stopped():
			continue
		case ws.StopSignal() == syscall.SIGTRAP && ws.TrapCause() == syscall.PTRACE_EVENT_EXIT:
			present, anonKiB, err = snapshot(pid, bin)
			if err == nil {
				err = syscall.PtraceDetach(pid)
			}
			return present, anonKiB, err
		}
		// A signal for the program (the Go runtime's own, SIGURG, among
		// them): pass it on.
		sig = int(ws.StopSignal())
		if sig == int(syscall.SIGTRAP) {
			sig = 0
		}
	}
}

// snapshot reads /proc/PID/maps and pagemap.
func snapshot(pid int, bin string) (present []uint64, anonKiB uint64, err error) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		exe = bin
	}
	maps, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, 0, err
	}
	defer maps.Close()
	pm, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return nil, 0, err
	}
	defer pm.Close()
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil {
			continue
		}
		name := ""
		if len(f) > 5 {
			name = f[5]
		}
		mine := name == exe
		if !mine && name != "" && name != "[heap]" {
			continue // shared libraries, the stack, vdso
		}
		entries := make([]byte, (end-start)/pageSize*8)
		if _, err := pm.ReadAt(entries, int64(start/pageSize*8)); err != nil {
			return nil, 0, fmt.Errorf("reading pagemap (run as root, or with CAP_SYS_ADMIN): %w", err)
		}
		for i := range (end - start) / pageSize {
			if binary.LittleEndian.Uint64(entries[i*8:])>>63 == 0 {
				continue
			}
			if mine {
				present = append(present, start+i*pageSize)
			} else {
				anonKiB += pageSize / 1024
			}
		}
	}
	return present, anonKiB, sc.Err()
}

// residency is what was resident, by section and by module.
type residency struct {
	sections map[string]uint64 // KiB
	modules  map[string]map[string]float64
	order    []section
}

// attribute credits each resident page to its section, and to the modules
// of the symbols in it by the bytes each has there; bytes of no symbol
// (the pclntab, headers, padding) go to "(no symbol)".
func attribute(present []uint64, secs []section, syms []symbol) residency {
	r := residency{sections: map[string]uint64{}, modules: map[string]map[string]float64{}, order: secs}
	for _, p := range present {
		sec := "(headers)"
		if i := sort.Search(len(secs), func(i int) bool { return secs[i].hi > p }); i < len(secs) && secs[i].lo < p+pageSize {
			sec = secs[i].name
		}
		r.sections[sec] += pageSize / 1024
		kind := map[string]string{".text": "text", ".rodata": "rodata", ".gopclntab": "pclntab"}[sec]
		if kind == "" {
			kind = "other"
		}
		got := uint64(0)
		i := sort.Search(len(syms), func(i int) bool { return syms[i].addr+syms[i].size > p })
		for ; i < len(syms) && syms[i].addr < p+pageSize; i++ {
			s := syms[i]
			overlap := min(p+pageSize, s.addr+s.size) - max(p, s.addr)
			r.credit(s.module, kind, float64(overlap)/1024)
			got += overlap
		}
		if got < pageSize {
			r.credit("(no symbol)", kind, float64(pageSize-got)/1024)
		}
	}
	return r
}

func (r residency) credit(module, kind string, kib float64) {
	m := r.modules[module]
	if m == nil {
		m = map[string]float64{}
		r.modules[module] = m
	}
	m[kind] += kib
	m[""] += kib
}

func writePages(w io.Writer, r residency, anonKiB uint64) {
	var file uint64
	for _, v := range r.sections {
		file += v
	}
	fmt.Fprintf(w, "resident at exit: %d KiB of the binary, %d KiB anonymous (heap, stacks)\n", file, anonKiB)
	for _, s := range r.order {
		if v := r.sections[s.name]; v > 0 {
			fmt.Fprintf(w, "%8d KiB of %8d  %s\n", v, (s.hi-s.lo)/1024, s.name)
		}
	}
	mods := make([]string, 0, len(r.modules))
	for m := range r.modules {
		mods = append(mods, m)
	}
	slices.SortFunc(mods, func(a, b string) int {
		return cmp.Or(cmp.Compare(r.modules[b][""], r.modules[a][""]), strings.Compare(a, b))
	})
	fmt.Fprintf(w, "%8s %8s %8s %8s  module (KiB resident)\n", "all", "text", "rodata", "pclntab")
	for _, m := range mods[:min(30, len(mods))] {
		v := r.modules[m]
		fmt.Fprintf(w, "%8.0f %8.0f %8.0f %8.0f  %s\n", v[""], v["text"], v["rodata"], v["pclntab"], m)
	}
}
