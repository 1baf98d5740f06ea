package eval_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deepgraph/deepgraph/eval"
)

func TestReadQuestionsFormats(t *testing.T) {
	tests := []struct {
		name   string
		format eval.Format
		in     string
		want   []eval.Question
	}{
		{"jsonl", eval.FormatJSONL, "# a comment\n{\"id\": \"a\", \"question\": \" Why? \", \"answer\": \"Because.\", \"sources\": [\"https://x.example/1\", \"notes/a.md\"]}\n\n{\"question\": \"And?\"}\n",
			[]eval.Question{{ID: "a", Question: "Why?", Answer: "Because.", Sources: []string{"https://x.example/1", "notes/a.md"}}, {ID: "q2", Question: "And?"}}},
		{"deepresearch bench query.jsonl", eval.FormatJSONL, `{"id": 51, "topic": "Science & Technology", "language": "en", "prompt": "Survey solid-state batteries."}` + "\n",
			[]eval.Question{{ID: "51", Question: "Survey solid-state batteries."}}},
		{"deepresearch bench reference.jsonl", eval.FormatJSONL, `{"id": 51, "prompt": "Survey solid-state batteries.", "article": "Solid-state batteries replace the liquid electrolyte."}` + "\n",
			[]eval.Question{{ID: "51", Question: "Survey solid-state batteries.", Answer: "Solid-state batteries replace the liquid electrolyte."}}},
		{"csv", eval.FormatCSV, "\ufeffID,Question,Answer,Sources\n7,\"Who, exactly?\",Ada,\"https://a.example https://b.example\"\n",
			[]eval.Question{{ID: "7", Question: "Who, exactly?", Answer: "Ada", Sources: []string{"https://a.example", "https://b.example"}}}},
		{"frames test.tsv", eval.FormatTSV, "\tPrompt\tAnswer\twikipedia_link_1\twikipedia_link_2\twikipedia_link_11+\treasoning_types\twiki_links\n" +
			"0\tIf my future wife has the same first name as the 15th first lady, what is her name?\tJane Ballou\thttps://en.wikipedia.org/wiki/A\thttps://en.wikipedia.org/wiki/B\t\tMultiple constraints\t['https://en.wikipedia.org/wiki/A', 'https://en.wikipedia.org/wiki/B']\n",
			[]eval.Question{{ID: "0", Question: "If my future wife has the same first name as the 15th first lady, what is her name?", Answer: "Jane Ballou",
				Sources: []string{"https://en.wikipedia.org/wiki/A", "https://en.wikipedia.org/wiki/B"}}}},
		{"frames without wiki_links", eval.FormatTSV, "\tPrompt\tAnswer\twikipedia_link_1\twikipedia_link_2\n3\tQ?\tA\thttps://w.example/1\tnan\n",
			[]eval.Question{{ID: "3", Question: "Q?", Answer: "A", Sources: []string{"https://w.example/1"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qs, err := eval.ReadQuestions(strings.NewReader(tt.in), tt.format)
			require.NoError(t, err)
			assert.Equal(t, tt.want, qs)
		})
	}
}

func TestReadQuestionsErrors(t *testing.T) {
	tests := []struct {
		name, in string
		format   eval.Format
		want     string
	}{
		{"empty", "", eval.FormatJSONL, "empty"},
		{"not json", "{\"question\": \"a\"}\n{oops\n", eval.FormatJSONL, "line 2: not a JSON object"},
		{"no question", "{\"id\": \"x\"}\n", eval.FormatJSONL, "line 1: no question"},
		{"duplicate id", "{\"id\": \"x\", \"question\": \"a\"}\n{\"id\": \"x\", \"question\": \"b\"}\n", eval.FormatJSONL, `the id "x" of question 1`},
		{"no question column", "id,text\n1,hello\n", eval.FormatCSV, "no question column"},
		{"bad sources", "{\"question\": \"a\", \"sources\": 5}\n", eval.FormatJSONL, "sources: use a list of URLs"},
		{"unknown format", "x", eval.Format("xml"), "unknown question format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := eval.ReadQuestions(strings.NewReader(tt.in), tt.format)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	assert.Equal(t, eval.FormatJSONL, eval.FormatOf("set.JSONL"))
	assert.Equal(t, eval.FormatTSV, eval.FormatOf("test.tsv"))
	assert.Equal(t, eval.FormatCSV, eval.FormatOf("x.csv"))
}

func TestStatements(t *testing.T) {
	answer := "# Heading\n\nRaft uses randomized timeouts [1](https://a.example). It was published in 2014, e.g. at USENIX. [2](https://b.example) [1](https://a.example)\n\n" +
		"- Leaders send heartbeats to followers [3](https://c.example).\n- Short.\n\n```\ncode is not a statement.\n```\n\n" +
		"Version 1.5 is out! Nothing cites this sentence here."
	got := eval.Statements(answer)
	require.Len(t, got, 5)
	assert.Equal(t, eval.Statement{Text: "Raft uses randomized timeouts.", Cites: []int{1}, URLs: []string{"https://a.example"}}, got[0])
	assert.Equal(t, "It was published in 2014, e.g. at USENIX.", got[1].Text)
	assert.Equal(t, []int{2, 1}, got[1].Cites)
	assert.Equal(t, "Leaders send heartbeats to followers.", got[2].Text)
	assert.Equal(t, "Version 1.5 is out!", got[3].Text)
	assert.Empty(t, got[4].Cites)
}
