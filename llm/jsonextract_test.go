package llm

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExtractJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"plain object", `{"a":1}`, `{"a":1}`},
		{"whitespace around", "\n\t {\"a\": [1, 2]} \n", `{"a":[1,2]}`},
		{"byte order mark", "\ufeff{\"a\":1}", `{"a":1}`},
		{"json fence", "```json\n{\"query\": [\"a\"], \"rationale\": \"r\"}\n```", `{"query":["a"],"rationale":"r"}`},
		{"uppercase fence language", "```JSON\n{\"a\":1}\n```", `{"a":1}`},
		{"bare fence", "```\n{\"a\":1}\n```", `{"a":1}`},
		{"fence on one line", "```json {\"a\":1} ```", `{"a":1}`},
		{"unclosed fence", "Here you go:\n```json\n{\"a\":1}\n", `{"a":1}`},
		{"fence preferred over prose", "Use the form {\"x\":0} as asked:\n```json\n{\"a\":1}\n```", `{"a":1}`},
		{"prose around", "Sure! Here is the JSON you asked for:\n{\"a\": \"b\"}\nLet me know if you need more.", `{"a":"b"}`},
		{"braces inside strings", `Answer: {"a": "x } y { z", "b": "}"} trailing }`, `{"a":"x } y { z","b":"}"}`},
		{"escaped quote and brace in string", `{"a": "say \"}\" now"}`, `{"a":"say \"}\" now"}`},
		{"think block", "<think>\nThe user wants {queries}. Let me think.\n</think>\n{\"a\":1}", `{"a":1}`},
		{"think block uppercase", "<THINK>hmm {}</THINK>{\"a\":1}", `{"a":1}`},
		{"thinking tag", "<thinking>{\"draft\": true}</thinking>\n```json\n{\"a\":1}\n```", `{"a":1}`},
		{"two think blocks", "<think>a</think>\n<think>{\"no\":1}</think>{\"a\":1}", `{"a":1}`},
		{"orphan closing tag", "Okay, so the user wants {x}...\n</think>\n\n{\"a\":1}", `{"a":1}`},
		{"unclosed think prefers last value", "<think>First {\"a\":0} hmm. Final:\n{\"a\":1}", `{"a":1}`},
		{"trailing commas", `{"a": [1, 2, ], "b": {"c": 3,},}`, `{"a":[1,2],"b":{"c":3}}`},
		{"missing commas", "{\"a\": 1\n \"b\": [\"x\" \"y\"]}", `{"a":1,"b":["x","y"]}`},
		{"line comments", "{\n  \"is_sufficient\": true, // or false\n  \"knowledge_gap\": \"\" # none\n}", `{"is_sufficient":true,"knowledge_gap":""}`},
		{"block comment", `{/* note */"a": /* x */ 1}`, `{"a":1}`},
		{"single quotes", `{'a': 'it\'s', 'b': ['x']}`, `{"a":"it's","b":["x"]}`},
		{"apostrophe in single-quoted string", `{'a': 'it's fine'}`, `{"a":"it's fine"}`},
		{"smart quotes", `{“query”: [“a”, “b”], “rationale”: “why”}`, `{"query":["a","b"],"rationale":"why"}`},
		{"smart quotes keep inner straight quotes as closers", `{“a”: “x”}`, `{"a":"x"}`},
		{"unquoted keys", `{query: ["a"], rationale_2: "r", $x: 1}`, `{"query":["a"],"rationale_2":"r","$x":1}`},
		{"unescaped inner quotes", `{"rationale": "The term "AI" is broad", "q": 1}`, `{"rationale":"The term \"AI\" is broad","q":1}`},
		{"raw newline and tab in string", "{\"a\": \"line1\nline2\tx\"}", `{"a":"line1\nline2\tx"}`},
		{"invalid escape kept", `{"re": "\d+ and \x"}`, `{"re":"\\d+ and \\x"}`},
		{"unicode escapes", `{"e": "\u00e9\ud83d\ude00"}`, `{"e":"é😀"}`},
		{"lone surrogate", `{"e": "\ud800x"}`, `{"e":"�x"}`},
		{"python literals", `{"a": True, "b": False, "c": None}`, `{"a":true,"b":false,"c":null}`},
		{"upper-case literals", `{"a": TRUE, "b": Null, "c": undefined}`, `{"a":true,"b":null,"c":null}`},
		{"numbers leniently", `{"a": +1, "b": 007, "c": 1., "d": .5, "e": -0.25e+3, "f": -00}`, `{"a":1,"b":7,"c":1,"d":0.5,"e":-0.25e+3,"f":-0}`},
		{"array when no object", "The list: [\"a\", \"b\"]", `["a","b"]`},
		{"whole array preferred over inner object", `[{"a":1},{"a":2}]`, `[{"a":1},{"a":2}]`},
		{"object preferred over earlier array in prose", `See [1]. Result: {"a":1}`, `{"a":1}`},
		{"invalid first object skipped", `Use {placeholders} like {name}. Result: {"a":1}`, `{"a":1}`},
		{"double encoded", `"{\"a\": 1}"`, `{"a":1}`},
		{"scalar reply", ` 42 `, `42`},
		{"string reply", `"hello"`, `"hello"`},
		{"nbsp whitespace", "{\u00a0\"a\":\u00a01}", `{"a":1}`},
		{"invalid utf8 replaced", "{\"a\": \"x\xffy\"}", `{"a":"x�y"}`},
		{"control char escaped", "{\"a\": \"x\x01y\"}", `{"a":"x\u0001y"}`},
		{"nested", `{"a": {"b": [{"c": [1, {"d": null}]}]}}`, `{"a":{"b":[{"c":[1,{"d":null}]}]}}`},
		{"hyphenated unquoted key", `{follow-up: 1}`, `{"follow-up":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExtractJSON(tt.in)
			require.NoError(t, err)
			assert.True(t, json.Valid(got), "output is not strict JSON: %s", got)
			assert.JSONEq(t, tt.want, string(got))
		})
	}
}

func TestExtractJSONErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantMsg string
	}{
		{"empty", "", "the reply is empty"},
		{"blank", " \n\t", "the reply is empty"},
		{"prose", "I cannot help with that.", "prose without a JSON object"},
		{"truncated object", `{"query": ["a", "b`, "may be cut off"},
		{"truncated after key", `Here: {"query": `, "may be cut off"},
		{"truncated inside a fence", "```json\n{\"a\": [1,\n", "may be cut off"},
		{"only reasoning, unclosed", "<think>I am still thinking about it", "prose without a JSON object"},
		{"NaN is not JSON", `{"a": NaN}`, `unexpected word "NaN"`},
		{"bare word value", `{"a": yes}`, `unexpected word "yes"`},
		{"missing colon", `{a 1}`, "expected ':'"},
		{"number with letters", `{"a": 12abc}`, "invalid number"},
		{"too deep", strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1), "nested deeper than 512"},
		{"broken scalar", `"unterminated`, "may be cut off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExtractJSON(tt.in)
			require.Error(t, err, "got %s", got)
			assert.ErrorIs(t, err, ErrNoJSON)
			assert.Contains(t, err.Error(), tt.wantMsg)
		})
	}
}

func TestExtractJSONSyntaxErrorQuotesContext(t *testing.T) {
	_, err := ExtractJSON(`{"a": 1, "b": yes, "c": 3}`)
	require.Error(t, err)
	var se *jsonSyntaxError
	require.True(t, errors.As(err, &se))
	assert.Contains(t, se.near, `"b": yes`)
}

func TestJSONCandidatesOrder(t *testing.T) {
	text := "First [1, 2], then {\"a\": 1}, then ```json\n{\"b\": 2}\n``` and {\"a\": 1} again"
	tests := []struct {
		prefer byte
		want   []string
	}{
		{'{', []string{`{"b":2}`, `{"a":1}`, `[1,2]`}},
		{'[', []string{`[1,2]`, `{"b":2}`, `{"a":1}`}},
		{0, []string{`{"b":2}`, `{"a":1}`, `[1,2]`}},
	}
	for _, tt := range tests {
		t.Run(string(rune(max(tt.prefer, '0'))), func(t *testing.T) {
			cands, err := jsonCandidates(text, tt.prefer)
			require.NoError(t, err)
			var got []string
			for _, c := range cands {
				got = append(got, string(c))
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestJSONCandidatesBoundedWork(t *testing.T) {
	// Pathological input: many starts that never close. It must finish
	// quickly and say why nothing was found.
	in := strings.Repeat(`{"a": [`, 20000)
	_, err := jsonCandidates(in, '{')
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNoJSON)
}

func TestSplitReasoning(t *testing.T) {
	tests := []struct {
		in, answer, reasoning string
		unclosed              bool
	}{
		{"no tags", "no tags", "", false},
		{"<think>a</think>b", "b", "", false},
		{"  <Think>a</tHINK>b", "b", "", false},
		{"<reasoning>x</reasoning><think>y</think>z", "z", "", false},
		{"pre</think>post", "post", "", false},
		{"<think>open", "", "open", true},
		{"text <think>inline</think> more", "text <think>inline</think> more", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			a, r, u := splitReasoning(tt.in)
			assert.Equal(t, tt.answer, a)
			assert.Equal(t, tt.reasoning, r)
			assert.Equal(t, tt.unclosed, u)
		})
	}
}

// FuzzExtractJSON checks that extraction never panics, always returns strict
// JSON, and reads valid JSON objects and arrays back unchanged — bare, in a
// fence, and (objects) inside prose.
func FuzzExtractJSON(f *testing.F) {
	seeds := []string{
		`{"a":1}`, `[1,2,3]`, `{"query":["a","b"],"rationale":"r"}`,
		"```json\n{\"a\": [1, 2, ],}\n```", `<think>{x}</think>{"a":"}"}`, `{'a': 'b'}`,
		`{“a”: “b”}`, `{"a": "x "y" z"}`, `{a: True}`, `"{\"a\":1}"`, `{"a": "\ud83d\ude00"}`,
		`{"a": "\u00"}`, `{"a":1e5,"b":-0.5}`, "{\"a\": \"\x00\"}", `{"a": [}`, `</think>`, `[[[[`,
		"{\"a\":1} // c\n", `{"a": /* */ 1}`, `{"a": 1 # c` + "\n}", `{"a":"\u2028"}`, "\xff{\"\xfe\":1}",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ExtractJSON(in)
		if err != nil {
			if !errors.Is(err, ErrNoJSON) {
				t.Fatalf("error does not match ErrNoJSON: %v", err)
			}
		} else if !json.Valid(got) {
			t.Fatalf("ExtractJSON(%q) = %q: not valid JSON", in, got)
		}
		// Valid objects and arrays come back unchanged (depth below the
		// limit is guaranteed by the length bound).
		trimmed := strings.TrimSpace(in)
		if len(in) > 1000 || !json.Valid([]byte(in)) || trimmed == "" || (trimmed[0] != '{' && trimmed[0] != '[') {
			return
		}
		var want any
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			return
		}
		check := func(label, text string) {
			got, err := ExtractJSON(text)
			if err != nil {
				t.Fatalf("%s: ExtractJSON(%q) failed on valid JSON: %v", label, text, err)
			}
			var v any
			if err := json.Unmarshal(got, &v); err != nil {
				t.Fatalf("%s: output %q does not decode: %v", label, got, err)
			}
			if !reflect.DeepEqual(want, v) {
				t.Fatalf("%s: ExtractJSON(%q) = %s, want the input back", label, text, got)
			}
		}
		check("bare", in)
		if !strings.Contains(in, "```") {
			check("fenced", "Here it is:\n```json\n"+in+"\n```\nAnything else?")
		}
		if trimmed[0] == '{' && !strings.ContainsAny(in, "<") {
			check("prose", "Sure, the result is "+in+" and that is all.")
		}
	})
}

func BenchmarkExtractJSON(b *testing.B) {
	replies := map[string]string{
		"strict": `{"is_sufficient": false, "knowledge_gap": "The summaries lack benchmarks.", "follow_up_queries": ["go iterator benchmark 2025", "range-over-func overhead"]}`,
		"messy": "<think>\nThe summaries cover syntax {yield} but not cost.\n</think>\nHere is my reflection:\n```json\n{\n  \"is_sufficient\": false, // not yet\n" +
			"  \"knowledge_gap\": \"The summaries lack benchmarks.\",\n  \"follow_up_queries\": [\"go iterator benchmark 2025\", \"range-over-func overhead\",],\n}\n```\nLet me know!",
	}
	for name, reply := range replies {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(reply)))
			for b.Loop() {
				if _, err := ExtractJSON(reply); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
