package local

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// ErrInvalidLocation is returned by ParseLocation for a URL that is not a
// file:// URL with an optional #L<start>[-L<end>] fragment.
var ErrInvalidLocation = errors.New("not a local passage location")

// Location points at a passage inside a corpus file: an absolute path and an
// inclusive, 1-based line range. It is what a citation of a local result
// needs; Result.URL carries it in the form Location.URL returns.
type Location struct {
	// Path is the absolute path of the file, in the operating system's form.
	Path string
	// StartLine and EndLine are the first and last line of the passage,
	// 1-based and inclusive. Both are 0 when the location names a whole file.
	StartLine int
	EndLine   int
}

// URL returns the location as a file:// URL with a GitHub-style line
// fragment, for example file:///home/me/notes/a.md#L10-L24 (or #L10 for a
// single line). Characters that are not allowed in a URL path are
// percent-encoded.
func (l Location) URL() string {
	p := filepath.ToSlash(l.Path)
	if !strings.HasPrefix(p, "/") {
		// A Windows path such as C:/docs/a.md becomes /C:/docs/a.md.
		p = "/" + p
	}
	u := url.URL{Scheme: "file", Path: p}
	switch {
	case l.StartLine <= 0:
	case l.EndLine <= l.StartLine:
		u.Fragment = "L" + strconv.Itoa(l.StartLine)
	default:
		u.Fragment = "L" + strconv.Itoa(l.StartLine) + "-L" + strconv.Itoa(l.EndLine)
	}
	return u.String()
}

// String returns the location in the compiler-style form path:start-end
// (path:start for one line, path alone for a whole file).
func (l Location) String() string {
	switch {
	case l.StartLine <= 0:
		return l.Path
	case l.EndLine <= l.StartLine:
		return l.Path + ":" + strconv.Itoa(l.StartLine)
	default:
		return l.Path + ":" + strconv.Itoa(l.StartLine) + "-" + strconv.Itoa(l.EndLine)
	}
}

// ParseLocation parses a URL produced by Location.URL (the URL of a local
// search result) back into a Location. It accepts the fragments #L10,
// #L10-L24 and #L10-24, and no fragment for a whole file. The error wraps
// ErrInvalidLocation.
func ParseLocation(rawURL string) (Location, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Location{}, fmt.Errorf("%w: %q: %w", ErrInvalidLocation, truncate(rawURL, 200), err)
	}
	if u.Scheme != "file" {
		return Location{}, fmt.Errorf("%w: %q is not a file:// URL", ErrInvalidLocation, truncate(rawURL, 200))
	}
	if u.Host != "" && u.Host != "localhost" {
		return Location{}, fmt.Errorf("%w: %q names a remote host %q", ErrInvalidLocation, truncate(rawURL, 200), u.Host)
	}
	if u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return Location{}, fmt.Errorf("%w: %q has no absolute path", ErrInvalidLocation, truncate(rawURL, 200))
	}
	p := u.Path
	if runtime.GOOS == "windows" && len(p) >= 3 && p[2] == ':' {
		p = p[1:] // /C:/docs → C:/docs
	}
	loc := Location{Path: filepath.FromSlash(p)}
	if u.Fragment == "" {
		return loc, nil
	}
	start, end, ok := parseLineFragment(u.Fragment)
	if !ok {
		return Location{}, fmt.Errorf("%w: %q: line fragment %q is not L<start> or L<start>-L<end> with 1 <= start <= end",
			ErrInvalidLocation, truncate(rawURL, 200), truncate(u.Fragment, 40))
	}
	loc.StartLine, loc.EndLine = start, end
	return loc, nil
}

// parseLineFragment parses L10, L10-L24 or L10-24.
func parseLineFragment(f string) (start, end int, ok bool) {
	first, rest, hasRange := strings.Cut(f, "-")
	start, ok = parseLineNumber(strings.TrimPrefix(first, "L"), first)
	if !ok {
		return 0, 0, false
	}
	if !hasRange {
		return start, start, true
	}
	end, ok = parseLineNumber(strings.TrimPrefix(rest, "L"), "L")
	if !ok || end < start {
		return 0, 0, false
	}
	return start, end, true
}

// parseLineNumber parses a positive decimal line number. whole must start
// with "L" (the caller's prefix check).
func parseLineNumber(digits, whole string) (int, bool) {
	if !strings.HasPrefix(whole, "L") || digits == "" || len(digits) > 9 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// truncate shortens s to at most n bytes (on a rune boundary) for messages.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !isRuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
