package eval

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Question is one item of a question set.
type Question struct {
	// ID names the question in every output; unique within a set.
	ID string `json:"id"`
	// Question is what the configurations research.
	Question string `json:"question"`
	// Answer is the reference answer, when the set has one: correctness is
	// judged against it.
	Answer string `json:"answer,omitempty"`
	// Sources are the pages a good run should find: URLs, or paths of a
	// corpus's files (relative to the corpus, or absolute). Source recall is
	// measured against them.
	Sources []string `json:"sources,omitempty"`
}

// Format is the layout of a question file.
type Format string

// The formats ReadQuestions reads.
const (
	FormatJSONL Format = "jsonl" // one JSON object per line
	FormatCSV   Format = "csv"   // comma-separated, a header row first
	FormatTSV   Format = "tsv"   // tab-separated, a header row first (FRAMES' test.tsv)
)

// FormatOf guesses a file's format from its name: .jsonl, .json and
// .ndjson are JSONL, .tsv is TSV, anything else CSV.
func FormatOf(name string) Format {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jsonl", ".json", ".ndjson":
		return FormatJSONL
	case ".tsv", ".tab":
		return FormatTSV
	}
	return FormatCSV
}

// The column names ReadQuestions accepts for each field, compared without
// case. Besides deepgraph's own (id, question, answer, sources) they are
// those of FRAMES (google/frames-benchmark's test.tsv: an unnamed index
// column, Prompt, Answer, wiki_links and wikipedia_link_1 …
// wikipedia_link_11+) and of DeepResearch Bench (query.jsonl: id, prompt;
// its reference articles: id, prompt, article).
var (
	idColumns       = []string{"id", "qid", "question_id", "index", "unnamed: 0", ""}
	questionColumns = []string{"question", "prompt", "query", "problem", "task"}
	answerColumns   = []string{"answer", "reference", "reference_answer", "gold_answer", "expected_answer", "article"}
	sourcesColumns  = []string{"sources", "wiki_links", "urls", "expected_sources"}
)

// sourceColumn matches FRAMES' numbered link columns.
var sourceColumn = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^wikipedia_link_\d+\+?$`) })

// maxQuestionLine bounds one line of a JSONL file (DeepResearch Bench's
// reference articles run to tens of kilobytes).
const maxQuestionLine = 4 << 20

// ReadQuestions reads a question set in the given format. Each question
// needs a question (or prompt) field; the id defaults to its place in the
// file ("q1", "q2", …); answer and sources are optional. Sources may be a
// JSON array, or a text of URLs separated by spaces, commas or newlines
// (FRAMES writes a Python list: ['https://…', 'https://…']). Errors name
// the line and the field.
func ReadQuestions(r io.Reader, f Format) ([]Question, error) {
	var (
		qs  []Question
		err error
	)
	switch f {
	case FormatJSONL:
		qs, err = readJSONL(r)
	case FormatCSV:
		qs, err = readTable(r, ',')
	case FormatTSV:
		qs, err = readTable(r, '\t')
	default:
		return nil, fmt.Errorf("eval: unknown question format %q: use jsonl, csv or tsv", f)
	}
	if err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, errors.New("eval: the question set is empty: it needs one question per line (JSONL) or row (CSV, TSV)")
	}
	seen := map[string]int{}
	for i, q := range qs {
		if j, ok := seen[q.ID]; ok {
			return nil, fmt.Errorf("eval: question %d has the id %q of question %d: ids must be unique", i+1, q.ID, j+1)
		}
		seen[q.ID] = i
	}
	return qs, nil
}

func readJSONL(r io.Reader) ([]Question, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxQuestionLine)
	var qs []Question
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if line == 1 {
			text = bytes.TrimPrefix(text, []byte("\ufeff"))
		}
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(text, &obj); err != nil {
			return nil, fmt.Errorf("eval: line %d: not a JSON object: %v", line, err)
		}
		fields := map[string]json.RawMessage{}
		for k, v := range obj {
			fields[strings.ToLower(strings.TrimSpace(k))] = v
		}
		q := Question{}
		var err error
		if q.ID, err = jsonText(fields, idColumns); err != nil {
			return nil, fmt.Errorf("eval: line %d: id: %v", line, err)
		}
		if q.Question, err = jsonText(fields, questionColumns); err != nil {
			return nil, fmt.Errorf("eval: line %d: question: %v", line, err)
		}
		if q.Answer, err = jsonText(fields, answerColumns); err != nil {
			return nil, fmt.Errorf("eval: line %d: answer: %v", line, err)
		}
		for _, name := range sourcesColumns {
			raw, ok := fields[name]
			if !ok {
				continue
			}
			var list []string
			if json.Unmarshal(raw, &list) == nil {
				q.Sources = cleanSources(list)
			} else {
				var s string
				if err := json.Unmarshal(raw, &s); err != nil {
					return nil, fmt.Errorf("eval: line %d: %s: use a list of URLs or a text of URLs", line, name)
				}
				q.Sources = splitSources(s)
			}
			break
		}
		if err := finish(&q, len(qs)+1); err != nil {
			return nil, fmt.Errorf("eval: line %d: %v", line, err)
		}
		qs = append(qs, q)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("eval: line %d is longer than %d MiB", line+1, maxQuestionLine>>20)
		}
		return nil, fmt.Errorf("eval: reading the questions: %w", err)
	}
	return qs, nil
}

// jsonText is the first of names present in fields, as text: a string or
// a number.
func jsonText(fields map[string]json.RawMessage, names []string) (string, error) {
	for _, n := range names {
		raw, ok := fields[n]
		if !ok || string(raw) == "null" {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return strings.TrimSpace(s), nil
		}
		var num json.Number
		if json.Unmarshal(raw, &num) == nil {
			return num.String(), nil
		}
		return "", fmt.Errorf("field %q is neither a text nor a number", n)
	}
	return "", nil
}

func readTable(r io.Reader, sep rune) ([]Question, error) {
	cr := csv.NewReader(r)
	cr.Comma = sep
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = sep == '\t'
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("eval: reading the header row: %w", err)
	}
	col := func(names []string) int {
		for _, n := range names {
			for i, h := range header {
				h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
				if h == n {
					return i
				}
			}
		}
		return -1
	}
	idCol, qCol, aCol, sCol := col(idColumns), col(questionColumns), col(answerColumns), col(sourcesColumns)
	var linkCols []int
	for i, h := range header {
		if sourceColumn().MatchString(strings.ToLower(strings.TrimSpace(h))) {
			linkCols = append(linkCols, i)
		}
	}
	if qCol < 0 {
		return nil, fmt.Errorf("eval: the header row %q has no question column: name one of %s", strings.Join(header, string(sep)), strings.Join(questionColumns, ", "))
	}
	cell := func(rec []string, i int) string {
		if i < 0 || i >= len(rec) {
			return ""
		}
		return strings.TrimSpace(rec[i])
	}
	var qs []Question
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
		row, _ := cr.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		q := Question{ID: cell(rec, idCol), Question: cell(rec, qCol), Answer: cell(rec, aCol)}
		if sCol >= 0 {
			q.Sources = splitSources(cell(rec, sCol))
		}
		if len(q.Sources) == 0 {
			var links []string
			for _, i := range linkCols {
				links = append(links, cell(rec, i))
			}
			q.Sources = cleanSources(links)
		}
		if err := finish(&q, len(qs)+1); err != nil {
			return nil, fmt.Errorf("eval: line %d: %v", row, err)
		}
		qs = append(qs, q)
	}
	return qs, nil
}

// finish checks q and gives it its default id.
func finish(q *Question, n int) error {
	if q.Question == "" {
		return fmt.Errorf("no question: give it in a field named %s", strings.Join(questionColumns, ", "))
	}
	if q.ID == "" {
		q.ID = "q" + strconv.Itoa(n)
	}
	return nil
}

// sourceSplit separates the URLs of a text list, Python's included.
var sourceSplit = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[\s,;\[\]'"]+`) })

func splitSources(s string) []string { return cleanSources(sourceSplit().Split(s, -1)) }

func cleanSources(list []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" || s == "nan" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}
