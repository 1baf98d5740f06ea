package local

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLocationURLRoundTrip(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("paths below are Unix paths")
	}
	tests := []struct {
		name   string
		loc    Location
		url    string
		String string
	}{
		{"range", Location{Path: "/home/me/notes/a.md", StartLine: 10, EndLine: 24}, "file:///home/me/notes/a.md#L10-L24", "/home/me/notes/a.md:10-24"},
		{"one line", Location{Path: "/a.md", StartLine: 3, EndLine: 3}, "file:///a.md#L3", "/a.md:3"},
		{"whole file", Location{Path: "/a.md"}, "file:///a.md", "/a.md"},
		{"escaped", Location{Path: "/my docs/50% #1?.md", StartLine: 1, EndLine: 2}, "file:///my%20docs/50%25%20%231%3F.md#L1-L2", "/my docs/50% #1?.md:1-2"},
		{"unicode", Location{Path: "/notes/café.md", StartLine: 7, EndLine: 9}, "file:///notes/caf%C3%A9.md#L7-L9", "/notes/café.md:7-9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.url, tt.loc.URL())
			assert.Equal(t, tt.String, tt.loc.String())
			got, err := ParseLocation(tt.loc.URL())
			require.NoError(t, err)
			assert.Equal(t, tt.loc, got)
		})
	}
}

func TestParseLocation(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("paths below are Unix paths")
	}
	tests := []struct {
		name    string
		in      string
		want    Location
		wantErr bool
	}{
		{"short end", "file:///a.md#L10-24", Location{Path: "/a.md", StartLine: 10, EndLine: 24}, false},
		{"localhost", "file://localhost/a.md#L2", Location{Path: "/a.md", StartLine: 2, EndLine: 2}, false},
		{"clean path", "file:///a/b.md", Location{Path: filepath.FromSlash("/a/b.md")}, false},
		{"http", "https://example.com/a.md#L1", Location{}, true},
		{"remote host", "file://server/a.md#L1", Location{}, true},
		{"relative", "file:a.md#L1", Location{}, true},
		{"zero line", "file:///a.md#L0", Location{}, true},
		{"reversed", "file:///a.md#L5-L3", Location{}, true},
		{"no L", "file:///a.md#10-20", Location{}, true},
		{"garbage fragment", "file:///a.md#section", Location{}, true},
		{"negative", "file:///a.md#L-3", Location{}, true},
		{"huge", "file:///a.md#L99999999999", Location{}, true},
		{"bad escape", "file:///a%zz.md", Location{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLocation(tt.in)
			if tt.wantErr {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrInvalidLocation)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{
		"file:///a.md#L10-L24", "file:///a.md#L3", "file:///x", "file://localhost/y#L1-2",
		"file:///a%20b.md#L1-L1", "http://x/#L1", "file:///a.md#L", "file:///%",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		loc, err := ParseLocation(s)
		if err != nil {
			assert.ErrorIs(t, err, ErrInvalidLocation)
			return
		}
		assert.True(t, loc.StartLine >= 0 && loc.EndLine >= loc.StartLine, "lines %d-%d", loc.StartLine, loc.EndLine)
		again, err := ParseLocation(loc.URL())
		require.NoError(t, err, "URL %q of parsed %q", loc.URL(), s)
		assert.Equal(t, loc, again)
	})
}
