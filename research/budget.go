package research

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/schemas"
)

// The context budget (see the package doc, "The context budget").

// RoleCompaction names the model calls that condense findings into notes
// to fit the context budget, in Report.Usage.
const RoleCompaction = "compaction"

// CharsPerToken is the estimate that turns a budget in tokens into
// characters of prompt: about 4 for English text with the common
// tokenizers, fewer for most other languages, so a budget is a bound that
// errs on the small side for English.
const CharsPerToken = 4

// Default context budgets, in tokens of findings in the answer prompt.
const (
	// DefaultContextBudget is the budget for models with a long context
	// (Gemini, GPT-4.1 and later, Claude) and for models that do not say
	// their name.
	DefaultContextBudget = 24_000
	// SmallContextBudget is the budget for models usually served with a
	// small context window: open-weight models (Ollama, vLLM) such as
	// Llama, Qwen, Mistral, Gemma and Phi.
	SmallContextBudget = 8_000
)

// reflectionShare is the part of the context budget the reflection's
// findings get: it only decides what to search next, and it runs once a
// loop, so it must stay small.
const reflectionShare = 3

// DefaultContextBudgetFor returns the default context budget for model:
// SmallContextBudget when its name (a Name() string method, as the
// providers' models have) is that of an open-weight family usually served
// with a small window, else DefaultContextBudget.
func DefaultContextBudgetFor(model llm.Model) int {
	named, ok := model.(interface{ Name() string })
	if !ok {
		return DefaultContextBudget
	}
	name := strings.ToLower(named.Name())
	for _, family := range []string{"llama", "qwen", "mistral", "mixtral", "gemma", "phi", "deepseek", "granite", "olmo", "smollm"} {
		if strings.Contains(name, family) {
			return SmallContextBudget
		}
	}
	return DefaultContextBudget
}

// budgetChars is the budget in characters of the answer's findings and of
// the reflection's.
func (r *Researcher) budgetChars() (answer, reflection int) {
	answer = r.cfg.ContextBudget * CharsPerToken
	return answer, answer / reflectionShare
}

// noteFor bounds a note: about a quarter of its summary, 200 to 1,200
// characters.
func noteFor(summary string) int { return min(max(len(summary)/4, 200), 1200) }

// compactNotes is the compaction call's reply: one note per finding, in
// the order they were given.
type compactNotes struct {
	Notes []string `json:"notes" jsonschema:"one condensed note per finding, in the order given"`
}

// withBudget wraps the node that reads the findings (reflection, the
// answer): when the findings in full exceed budget characters, every
// finding without a note gets one first — the compaction model condenses
// them, a batch of at most budget characters per call — and the node sees
// the state with the notes, which it writes along with its own update.
func (r *Researcher) withBudget(node graph.NodeFunc[State], budget int) graph.NodeFunc[State] {
	return func(ctx context.Context, s State) (graph.Update[State], error) {
		notes, usage, err := r.compact(ctx, s, budget)
		if err != nil {
			return graph.Update[State]{}, err
		}
		if usage != nil {
			s.Notes = notes
		}
		upd, err := node(ctx, s)
		if err != nil {
			// The condensing was paid for, even if the node failed.
			return upd, nodes.FailWithUsage(ctx, err, usage)
		}
		if usage == nil {
			return upd, nil
		}
		return upd.With(fNotes.Set(notes), fUsage.Merge(usage)), nil
	}
}

// compact returns the notes of s with a note for every finding that has
// none, when the findings in full exceed budget characters; usage is nil
// when nothing was condensed.
func (r *Researcher) compact(ctx context.Context, s State, budget int) (map[int]string, llm.UsageByRole, error) {
	var uncondensed []Finding
	for _, f := range s.Findings {
		if _, ok := s.Notes[f.ID]; !ok {
			uncondensed = append(uncondensed, f)
		}
	}
	if summariesLen(s.Findings) <= budget || len(uncondensed) == 0 {
		return s.Notes, nil, nil
	}
	meter := new(llm.Meter)
	model := llm.Metered(r.cfg.CompactionModel, meter, RoleCompaction)
	notes := maps.Clone(s.Notes)
	if notes == nil {
		notes = make(map[int]string, len(uncondensed))
	}
	topic := Topic(s.Messages)
	for len(uncondensed) > 0 {
		n, size := 0, 0
		for n < len(uncondensed) && (n == 0 || size+len(uncondensed[n].Summary) <= budget) {
			size += len(uncondensed[n].Summary)
			n++
		}
		batch := uncondensed[:n]
		uncondensed = uncondensed[n:]
		out, err := llm.Structured[compactNotes](ctx, model, compactionPrompt(topic, r.today(), batch), llm.Temperature(0))
		if err != nil {
			err = fmt.Errorf("condensing %d findings to fit the context budget of %d tokens (Config.ContextBudget): %w", len(batch), r.cfg.ContextBudget, err)
			return nil, nil, nodes.FailWithUsage(ctx, err, meter.Snapshot())
		}
		for i, f := range batch {
			note := ""
			if i < len(out.Notes) {
				note = strings.TrimSpace(out.Notes[i])
			}
			if note == "" { // the model gave too few notes: the summary's start stands in
				note = f.Summary
			}
			notes[f.ID] = clipNote(note, noteFor(f.Summary)*3/2)
		}
	}
	return notes, meter.Snapshot(), nil
}

// clipNote cuts s to at most n bytes, after the last sentence or citation
// marker that fits, so that no marker is cut in two.
func clipNote(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := s[:n]
	if i := strings.LastIndexAny(cut, ".!?)\n"); i > n/2 {
		return strings.TrimSpace(cut[:i+1])
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	if open := strings.LastIndexByte(s[:n], '['); open > strings.LastIndexByte(s[:n], ')') {
		n = open // a marker would be cut: drop it whole
	}
	return strings.TrimSpace(s[:n]) + " …"
}

// fitted are the findings as a prompt shows them within a budget: each in
// full, as its note, or left out.
type fitted struct {
	text      []string // per finding; "" when left out
	condensed []bool
	omitted   int
}

// fit chooses how the findings appear within budget characters: all in
// full when they fit; otherwise first every finding as its note (or in
// full when it has none), newest first, as long as they fit, so that as
// many as possible are seen at all; then notes are replaced by the full
// summary, newest first, while the budget allows. What does not fit is
// left out, oldest first.
func fit(fs []Finding, notes map[int]string, budget int) fitted {
	out := fitted{text: make([]string, len(fs)), condensed: make([]bool, len(fs))}
	if summariesLen(fs) <= budget {
		for i, f := range fs {
			out.text[i] = f.Summary
		}
		return out
	}
	used := 0
	for i := len(fs) - 1; i >= 0; i-- {
		t, condensed := fs[i].Summary, false
		if n, ok := notes[fs[i].ID]; ok {
			t, condensed = n, true
		}
		if used+len(t) > budget {
			continue
		}
		used += len(t)
		out.text[i], out.condensed[i] = t, condensed
	}
	for i := len(fs) - 1; i >= 0; i-- {
		if !out.condensed[i] {
			continue
		}
		if grow := len(fs[i].Summary) - len(out.text[i]); used+grow <= budget {
			used += grow
			out.text[i], out.condensed[i] = fs[i].Summary, false
		}
	}
	for _, t := range out.text {
		if t == "" {
			out.omitted++
		}
	}
	return out
}

// summariesLen is the length of the findings' summaries in full.
func summariesLen(fs []Finding) int {
	n := 0
	for _, f := range fs {
		n += len(f.Summary)
	}
	return n
}

// render joins the fitted findings with sep, marking the condensed ones,
// and says how many were left out.
func (ft fitted) render(sep string) string {
	parts := ft.parts()
	if ft.omitted > 0 {
		parts = append([]string{ft.omittedNote()}, parts...)
	}
	return strings.Join(parts, sep)
}

// parts are the findings shown, in order, the condensed ones marked.
func (ft fitted) parts() []string {
	parts := make([]string, 0, len(ft.text))
	for i, t := range ft.text {
		switch {
		case t == "":
		case ft.condensed[i]:
			parts = append(parts, "(condensed) "+t)
		default:
			parts = append(parts, t)
		}
	}
	return parts
}

func (ft fitted) omittedNote() string {
	return fmt.Sprintf("(%d earlier summaries are left out to fit the context budget.)", ft.omitted)
}

// fencedFindings are the findings within budget characters, joined by
// sep, as one <untrusted> element.
func fencedFindings(s State, budget int, sep string) string {
	return untrusted.Wrap("", fit(s.Findings, s.Notes, budget).render(sep))
}

func compactionPrompt(topic, today string, batch []Finding) []schemas.Message {
	var b strings.Builder
	for i, f := range batch {
		fmt.Fprintf(&b, "<finding n=\"%d\" query=%q max_chars=\"%d\">\n%s\n</finding>\n\n", i+1, oneLine(f.Query), noteFor(f.Summary), f.Summary)
	}
	return []schemas.Message{schemas.UserMessage(fmt.Sprintf(compactionPromptText, oneLine(topic), today, len(batch), untrusted.Wrap("", b.String())))}
}
