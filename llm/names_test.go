package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/schemas"
)

func TestAPIName(t *testing.T) {
	tests := map[string]string{
		"SearchQueryList":       "SearchQueryList",
		"page[int]":             "page_int_",
		"a b.c":                 "a_b_c",
		"":                      "response",
		"snake_case-ok":         "snake_case-ok",
		"Ünïcode":               "_n_code",
		strings.Repeat("x", 80): strings.Repeat("x", 64),
	}
	for in, want := range tests {
		assert.Equal(t, want, APIName(in), in)
	}
}

func TestToolNamesWire(t *testing.T) {
	long := "server." + strings.Repeat("x", 57) // 64 characters, 65 on the wire
	tests := []struct {
		name, wire string
	}{
		{"web_search", "web_search"},
		{"fetch-page", "fetch-page"},
		{"files.read_file", "files__read_file"},
		{"a.b.c", "a__b__c"},
		{"git.log-1", "git__log-1"},
		{"odd name:é", "odd_name__"},
		{"", ""},
		{strings.Repeat("y", 64), strings.Repeat("y", 64)},
		{long, "server__" + strings.Repeat("x", 47) + "_" + shortHash(long)},
	}
	var zero ToolNames
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := NewToolNames([]schemas.ToolDef{{Name: tt.name}})
			require.NoError(t, err)
			assert.Equal(t, tt.wire, n.Wire(tt.name))
			assert.Equal(t, tt.name, n.Name(tt.wire), "decodes back")
			assert.Equal(t, tt.wire, zero.Wire(tt.name), "the zero value encodes the same way")
			assert.LessOrEqual(t, len(n.Wire(tt.name)), 64)
		})
	}
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

func TestToolNamesName(t *testing.T) {
	n, err := NewToolNames([]schemas.ToolDef{{Name: "files.read_file"}, {Name: "web_search"}})
	require.NoError(t, err)
	tests := map[string]string{
		"files__read_file": "files.read_file",
		"web_search":       "web_search",
		"other__tool":      "other__tool", // not offered: unchanged
		"files.read_file":  "files.read_file",
		"":                 "",
	}
	for wire, want := range tests {
		assert.Equal(t, want, n.Name(wire), wire)
	}
	assert.Equal(t, "gone__tool", n.Wire("gone.tool"), "names not offered are encoded too")
	assert.Equal(t, "other__tool", ToolNames{}.Name("other__tool"), "the zero value decodes nothing")
}

func TestToolNamesCollisions(t *testing.T) {
	tests := []struct {
		name    string
		defs    []string
		wantErr string
	}{
		{"none", []string{"files.read", "files.write", "web_search"}, ""},
		{"a repeated name is not a collision", []string{"files.read", "files.read"}, ""},
		{"dotted, then plain", []string{"files.read", "files__read"},
			`tools "files.read" and "files__read" would both be sent as "files__read"`},
		{"plain, then dotted", []string{"files__read", "x", "files.read"},
			`tools "files__read" and "files.read" would both be sent as "files__read"`},
		{"two encodings", []string{"a.b_c", "a_.b_c"}, ""},
		{"other characters", []string{"a:b", "a_b"}, `tools "a:b" and "a_b" would both be sent as "a_b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defs := make([]schemas.ToolDef, len(tt.defs))
			for i, d := range tt.defs {
				defs[i] = schemas.ToolDef{Name: d}
			}
			_, err := NewToolNames(defs)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Contains(t, err.Error(), "rename one of them")
		})
	}
}
