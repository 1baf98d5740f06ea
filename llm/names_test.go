package llm

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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
