package local

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildMatch(t *testing.T) {
	tests := []struct {
		name  string
		query string
		want  string
	}{
		{"one word", "checkpoint", `"checkpoint"`},
		{"phrase boost and OR", "durable checkpoints", `"durable checkpoints" OR "durable" OR "checkpoints"`},
		{"stopwords dropped from terms, kept in phrase", "how do I install on Linux?", `"how do i install on linux" OR "install" OR "linux"`},
		{"only stopwords kept", "the who", `"the who" OR "the" OR "who"`},
		{"syntax characters are separators", `foo AND (bar OR "baz"*) NEAR/3 -qux:`, `"foo and bar or baz near 3 qux" OR "foo" OR "bar" OR "baz" OR "near" OR "3" OR "qux"`},
		{"duplicates once", "go go go", `"go go go" OR "go"`},
		{"unicode and case", "Café ÜBER naïve", `"café über naïve" OR "café" OR "über" OR "naïve"`},
		{"column filter is not syntax", "title:secret", `"title secret" OR "title" OR "secret"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := buildMatch(tt.query)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBuildMatchLimits(t *testing.T) {
	long := strings.Repeat("word", 100) // one 400-rune word
	got, err := buildMatch(long)
	require.NoError(t, err)
	assert.Equal(t, `"`+strings.Repeat("word", 16)+`"`, got, "over-long words are cut to maxTermRunes")

	var many []string
	for i := range 100 {
		many = append(many, "t"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	got, err = buildMatch(strings.Join(many, " "))
	require.NoError(t, err)
	assert.Equal(t, maxQueryTerms, strings.Count(got, " OR ")+1, "terms are capped and no phrase is added for long queries")
}

func TestBuildMatchEmpty(t *testing.T) {
	for _, q := range []string{"", "   \n\t", "?!… — ***", `""`} {
		t.Run(q, func(t *testing.T) {
			_, err := buildMatch(q)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrEmptyQuery)
		})
	}
}

// FuzzBuildMatch runs every expression buildMatch produces through a real
// FTS5 table: whatever the text, there must be no syntax error.
func FuzzBuildMatch(f *testing.F) {
	for _, s := range []string{
		"hello world", `"unbalanced`, "a AND (b", "NEAR(a b, 3)", "col:term", "x*", "^start", "-neg",
		"\x00\xff", "é\u0301", "\u0301", "日本語のテキスト", "OR OR OR", "AND", "NOT x", "{a b}: c", "a + b",
	} {
		f.Add(s)
	}
	db, err := openFTS("file::memory:")
	require.NoError(f, err)
	f.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1) // one in-memory database
	ctx := context.Background()
	for _, s := range schemaStmts[3:] {
		_, err := db.ExecContext(ctx, s)
		require.NoError(f, err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO passages_fts(title, body, path) VALUES('Guide', 'hello world café', 'a.md')`)
	require.NoError(f, err)

	f.Fuzz(func(t *testing.T, q string) {
		match, err := buildMatch(q)
		if err != nil {
			assert.ErrorIs(t, err, ErrEmptyQuery)
			return
		}
		rows, err := db.QueryContext(ctx, `SELECT rowid, snippet(passages_fts, 1, '', '', '…', 8) FROM passages_fts WHERE passages_fts MATCH ? ORDER BY rank LIMIT 5`, match)
		require.NoError(t, err, "query %q → MATCH %q", q, match)
		for rows.Next() {
		}
		assert.NoError(t, rows.Err(), "query %q → MATCH %q", q, match)
		assert.NoError(t, rows.Close())
	})
}
