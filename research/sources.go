package research

import (
	"slices"
	"strings"
)

// The research budget: a bound, in tokens, on each research (summary)
// prompt — the search results and the pages read for one query — so that
// a run's research prompts together stay bounded whatever its effort.

// Defaults of the research budget.
const (
	// RunResearchBudget is the tokens a run's research prompts take
	// together at most when each has its default budget: it is shared by
	// the most research prompts the run can make, its queries × loops.
	RunResearchBudget = 75_000
	// MinResearchBudget and MaxResearchBudget bound the default budget of
	// one research prompt: never so small that a summary has nothing to
	// read (many queries and loops), never larger than a few pages need
	// (few queries).
	MinResearchBudget = 1_000
	MaxResearchBudget = 4_000
)

// ResearchBudgetFor returns the default budget, in tokens, of one research
// prompt of a run of at most queries queries a round and loops loops:
// RunResearchBudget over queries × loops, from MinResearchBudget to
// MaxResearchBudget. With the effort presets: low and medium 4,000, high
// 1,500.
func ResearchBudgetFor(queries, loops int) int {
	prompts := max(queries, 1) * max(loops, 1)
	return min(max(RunResearchBudget/prompts, MinResearchBudget), MaxResearchBudget)
}

// researchBudget is the budget of each research prompt of the run in s:
// Config.ResearchBudget, or ResearchBudgetFor the run's limits.
func (r *Researcher) researchBudget(s State) int {
	if r.cfg.ResearchBudget > 0 {
		return r.cfg.ResearchBudget
	}
	return ResearchBudgetFor(r.limits(s))
}

// minSourceChars is the least text a source keeps when a research prompt's
// budget is smaller than the rest of the prompt (a very long question).
const minSourceChars = 300

// truncated marks a source text that was cut.
const truncated = " …[truncated]"

// fitSources shares avail bytes fairly among the sources' texts: texts
// shorter than an equal share stay whole, and what they leave is shared by
// the longer ones, which are all cut to the same length, keeping their
// start (see cutText). The texts are returned in their order.
func fitSources(texts []string, avail int) []string {
	total := 0
	for _, t := range texts {
		total += len(t)
	}
	if total <= avail {
		return texts
	}
	lens := make([]int, len(texts))
	for i, t := range texts {
		lens[i] = len(t)
	}
	slices.Sort(lens)
	capLen, left := 0, avail
	for i, l := range lens {
		share := left / (len(lens) - i)
		if l > share {
			capLen = share
			break
		}
		left -= l
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = t
		if len(t) > capLen {
			out[i] = cutText(t, capLen)
		}
	}
	return out
}

// cutText cuts s to at most n bytes, truncated marker included, keeping its
// start: after the last sentence, line or word end in the last fifth of
// what fits, never inside a UTF-8 character, and never inside a bracketed
// label or a markdown link ([S2], [1], [text](url)): one that would be cut
// is dropped whole.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	keep := max(n-len(truncated), 0)
	for keep > 0 && !isRuneStart(s[keep]) {
		keep--
	}
	kept := s[:keep]
	if open := strings.LastIndexByte(kept, '['); open >= 0 && len(kept)-open <= labelWindow {
		rest := kept[open:]
		closed := strings.IndexByte(rest, ']')
		switch {
		case closed < 0: // [label… cut
			kept = kept[:open]
		case strings.HasPrefix(rest[closed+1:], "(") && !strings.Contains(rest[closed+1:], ")"): // [text](url… cut
			kept = kept[:open]
		case closed == len(rest)-1 && strings.HasPrefix(s[keep:], "("): // [text] cut before (url)
			kept = kept[:open]
		}
	}
	if i := strings.LastIndexAny(kept, ".!?\n"); i >= 0 && i >= len(kept)*4/5 {
		kept = kept[:i+1]
	} else if i := strings.LastIndexAny(kept, " \t"); i >= 0 && i >= len(kept)*4/5 {
		kept = kept[:i]
	}
	return strings.TrimRight(kept, " \t\n") + truncated
}

// labelWindow is how far back a cut looks for the start of a label or a
// link it would split: labels and citation links are short, and a stray
// '[' long before the cut must not cost the text.
const labelWindow = 300
