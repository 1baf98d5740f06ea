package local

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// ErrEmptyQuery is returned by Search for a query with no words in it
// (empty, blank, or punctuation only).
var ErrEmptyQuery = errors.New("empty query")

const (
	// maxQueryTerms bounds the number of distinct terms taken from one
	// query, so a model pasting a whole page cannot build a huge MATCH.
	maxQueryTerms = 32
	// maxPhraseTerms is the longest query whose words are also searched as
	// an exact phrase (which boosts passages containing it verbatim).
	maxPhraseTerms = 8
	// maxTermRunes bounds a single term.
	maxTermRunes = 64
)

// stopwords are dropped from a query when it has other words, so "how do I
// install on linux" ranks by "install" and "linux". They still count for
// the exact-phrase boost. The list is short and English on purpose: BM25's
// inverse document frequency already discounts common words.
var stopwords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"can": true, "did": true, "do": true, "does": true, "for": true, "from": true, "how": true,
	"i": true, "in": true, "is": true, "it": true, "of": true, "on": true, "or": true, "that": true,
	"the": true, "this": true, "to": true, "was": true, "what": true, "when": true, "where": true,
	"which": true, "who": true, "why": true, "with": true, "you": true,
}

// buildMatch turns free text (from a user or a model) into an FTS5 MATCH
// expression that cannot be a syntax error: the text is split into words
// (letters, digits and combining marks), every word is a double-quoted FTS5
// string (words contain no quotes, so no escaping is needed), and the words
// are OR-combined so that passages matching only some of them are still
// found, ranked by BM25. A query of 2 to maxPhraseTerms words also searches
// the words as one phrase, which ranks verbatim occurrences first.
//
// This is the exhaustive expression; Search narrows it with planMatch when
// its terms match too many passages to rank quickly.
func buildMatch(query string) (string, error) {
	q, err := parseQuery(query)
	if err != nil {
		return "", err
	}
	return q.expr(), nil
}

// parsedQuery is a query split into what buildMatch combines.
type parsedQuery struct {
	// phrase is the query's words as one exact phrase, or "" when the
	// query is one word or longer than maxPhraseTerms.
	phrase string
	// terms are the distinct searched words, in query order: stopwords
	// dropped unless nothing else remains, at most maxQueryTerms.
	terms []string
}

func parseQuery(query string) (parsedQuery, error) {
	words := queryWords(query)
	if len(words) == 0 {
		if strings.TrimSpace(query) == "" {
			return parsedQuery{}, fmt.Errorf("%w: give words to search the corpus for", ErrEmptyQuery)
		}
		return parsedQuery{}, fmt.Errorf("%w: %q contains no words to search for", ErrEmptyQuery, truncate(query, 80))
	}

	seen := make(map[string]bool, len(words))
	var terms, stops []string
	for _, w := range words {
		if seen[w] {
			continue
		}
		seen[w] = true
		if stopwords[w] {
			stops = append(stops, w)
		} else {
			terms = append(terms, w)
		}
	}
	if len(terms) == 0 {
		terms = stops // a query of stopwords only ("the who") still searches
	}
	if len(terms) > maxQueryTerms {
		terms = terms[:maxQueryTerms]
	}
	q := parsedQuery{terms: terms}
	if len(words) >= 2 && len(words) <= maxPhraseTerms {
		q.phrase = strings.Join(words, " ")
	}
	return q, nil
}

// expr is the exhaustive expression: the phrase (if any) OR every term.
func (q parsedQuery) expr() string {
	if q.phrase == "" {
		return orTerms(q.terms)
	}
	return quote(q.phrase) + " OR " + orTerms(q.terms)
}

// quote makes t an FTS5 string; t holds no double quote (see queryWords).
func quote(t string) string { return `"` + t + `"` }

func orTerms(ts []string) string  { return joinTerms(ts, " OR ") }
func andTerms(ts []string) string { return joinTerms(ts, " AND ") }

func joinTerms(ts []string, op string) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteString(op)
		}
		b.WriteString(quote(t))
	}
	return b.String()
}

// queryWords splits s into lower-cased words of letters, digits and
// combining marks, the characters SQLite's unicode61 tokenizer keeps.
// Over-long words are cut to maxTermRunes runes.
func queryWords(s string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			if len(cur) > maxTermRunes {
				cur = cur[:maxTermRunes]
			}
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r) {
			cur = append(cur, unicode.ToLower(r))
			continue
		}
		flush()
		if len(words) >= 4*maxQueryTerms {
			break
		}
	}
	flush()
	return words
}
