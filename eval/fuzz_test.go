package eval_test

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deepgraph/deepgraph/eval"
)

var link = regexp.MustCompile(`\[\d{1,4}\]\([^()\s]+\)`)

// Answers and question files are untrusted input: no panic, and the
// statements never keep a citation link in their text.
func FuzzStatements(f *testing.F) {
	for _, s := range []string{"A b c [1](https://a.example). D e f.", "- x y z [2](u) [3](v)!\n# h\n```\nq\n```", "e.g. i.e. U.S. a. [1](", "日本語の文です。[1](https://a.example) 次の文。"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		for _, st := range eval.Statements(answer) {
			if len(st.Cites) != len(st.URLs) {
				t.Fatalf("cites %v and urls %v differ", st.Cites, st.URLs)
			}
			if utf8.ValidString(answer) && !utf8.ValidString(st.Text) {
				t.Fatalf("invalid UTF-8 from valid input: %q", st.Text)
			}
			if link.MatchString(st.Text) {
				t.Fatalf("a link left in %q", st.Text)
			}
		}
		_ = eval.Passage(answer, answer, 50)
	})
}

func FuzzReadQuestions(f *testing.F) {
	f.Add("{\"id\": 1, \"question\": \"q\", \"sources\": [\"a\"]}\n", "id,question\n1,q\n")
	f.Fuzz(func(t *testing.T, jsonl, csv string) {
		for _, in := range []struct {
			s string
			f eval.Format
		}{{jsonl, eval.FormatJSONL}, {csv, eval.FormatCSV}, {csv, eval.FormatTSV}} {
			qs, err := eval.ReadQuestions(strings.NewReader(in.s), in.f)
			if err != nil {
				continue
			}
			seen := map[string]bool{}
			for _, q := range qs {
				if q.ID == "" || q.Question == "" || seen[q.ID] {
					t.Fatalf("a question without id or text, or a duplicate id: %+v", q)
				}
				seen[q.ID] = true
			}
		}
	})
}
