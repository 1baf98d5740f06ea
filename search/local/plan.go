package local

import (
	"cmp"
	"slices"
)

// defaultCandidateBudget is the number of passages a search ranks at most
// when it can choose: BM25 costs about 2 µs per ranked passage here, while
// counting a term's passages costs about 60 ns each, so a search first
// counts its terms' passages and, when they add up to more than this,
// ranks a smaller candidate set (see planMatch). 20,000 passages keep a
// query under 100 ms on a 160k-passage corpus on a small machine.
const defaultCandidateBudget = 20_000

// matchStep is one expression Search may run. filter, when set, is the
// part of match that decides which passages it returns; Search runs the
// step only if filter matches enough passages (it is counted first), or
// if the step is the last.
type matchStep struct {
	filter string
	match  string
}

// planMatch chooses the MATCH expressions for q, given how many passages
// contain each term (df, in q.terms order, counted up to budget+1) and the
// candidate budget:
//
//   - When the terms' passages add up to at most budget, the exhaustive
//     expression q.expr() runs unchanged: a query of content words (rare
//     terms) is ranked exactly as always.
//   - Otherwise the terms are taken rarest first, and those whose passages
//     add up to at most budget are the candidate terms: only passages with
//     at least one of them are ranked, with every term, the common ones
//     included, still counting in BM25. The expression is
//     (rare1 OR rare2) AND (q.expr()), so the candidate terms count twice
//     in the score: a common term counts half as much as it used to, and a
//     passage holding only common terms is not returned.
//   - When even the rarest term is in more than budget passages (a query of
//     common words only), conjunctions are tried first: passages holding
//     every term, then every term but the most common one, and so on; the
//     first conjunction that matches at least the wanted number of passages
//     (or the last, the rarest term alone) is ranked with every term
//     counting. Passages holding all the words of a common-word query are
//     what its user means, and there are few of them.
func planMatch(q parsedQuery, df []int, budget int) []matchStep {
	full := q.expr()
	total := 0
	for _, n := range df {
		total += n
	}
	if total <= budget || len(q.terms) == 1 {
		return []matchStep{{match: full}}
	}
	order := make([]int, len(q.terms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(df[a], df[b]) })
	byRarity := make([]string, len(order))
	for i, j := range order {
		byRarity[i] = q.terms[j]
	}

	sum, rare := 0, 0
	for _, j := range order {
		if sum+df[j] > budget {
			break
		}
		sum += df[j]
		rare++
	}
	if rare > 0 {
		return []matchStep{{match: "(" + orTerms(byRarity[:rare]) + ") AND (" + full + ")"}}
	}
	steps := make([]matchStep, 0, len(byRarity))
	for k := len(byRarity); k >= 1; k-- {
		filter := andTerms(byRarity[:k])
		steps = append(steps, matchStep{filter: filter, match: "(" + filter + ") AND (" + full + ")"})
	}
	return steps
}
