package nodes

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/tools"
)

// The agent's context budget.
//
// Each think step sends the system prompt, the tools, the task and the
// conversation so far (at most AgentConfig.Window messages). With parallel
// calls and pages of 10,000 characters, forty messages reach ~100k tokens;
// so the agent also counts tokens — estimated at one per four characters,
// the usual rate of English text with the providers' tokenizers — and keeps
// each call within AgentConfig.ContextTokens. When the conversation does
// not fit, the recent steps stay as they are, as many as fit in three
// quarters of the budget (a tool call is never parted from its results),
// and the older ones are condensed into one note after the task: each
// step's thought and calls in a line, the start of each result, and every
// source label with its URL, so the answer can still cite [S1] from step 1.
// The latest plan (the planning tool's last result) is kept whole. The
// note says that the context was condensed. The condensing is extractive —
// no model call — so it costs nothing and cannot fail.
//
// A provider may still refuse a request as too long (its tokenizer counts
// more than the estimate, or its window is smaller than the budget): on
// such an error the think step condenses to half the estimate and retries
// once.

// DefaultContextTokens is AgentConfig.ContextTokens's default: well inside
// the 128k-token windows of current models, with room for the reply.
const DefaultContextTokens = 48000

// charsPerToken is the estimate's rate.
const charsPerToken = 4

// estimateTokens estimates the tokens of msgs and of the tool definitions
// defs.
func estimateTokens(msgs []schemas.Message, defs []schemas.ToolDef) int {
	n := 0
	for _, m := range msgs {
		n += messageTokens(m)
	}
	if len(defs) > 0 {
		if data, err := json.Marshal(defs); err == nil {
			n += len(data) / charsPerToken
		}
	}
	return n
}

func messageTokens(m schemas.Message) int {
	n := 4 + len(m.Content)/charsPerToken
	for _, c := range m.ToolCalls {
		n += 4 + (len(c.Name)+len(c.Arguments))/charsPerToken
	}
	n += 800 * len(m.Images) // an image costs what a provider charges for a small one
	return n
}

// condenseNote opens the note of condensed steps.
const condenseNote = "Context note: to stay within the context budget, the %d earlier messages of this run are condensed below (older steps first). Results are shortened; the sources keep their labels — cite them as before. Call a tool again if you need a detail that is not here.\n\n"

// fitContext returns recent, the window of the conversation, fitted with
// the other parts of the prompt (fixed: their tokens) into budget: as is
// when it fits, or else the most recent steps that fit in three quarters
// of what is left, after a note condensing all the messages of all before
// them (all is the whole conversation; recent is its end).
func fitContext(all, recent []schemas.Message, fixed, budget int) []schemas.Message {
	total := fixed
	for _, m := range recent {
		total += messageTokens(m)
	}
	if total <= budget && (len(recent) == len(all) || budget-total >= budget/8) {
		if len(recent) == len(all) {
			return recent
		}
		// The window left older messages out: condense them, so that
		// their sources stay citable.
		note := condense(all[:len(all)-len(recent)], (budget-total)*charsPerToken)
		return append([]schemas.Message{schemas.UserMessage(note)}, recent...)
	}
	room := (budget - fixed) * 3 / 4
	start := len(recent)
	used := 0
	for i := len(recent) - 1; i >= 0; i-- {
		used += messageTokens(recent[i])
		if used > room {
			break
		}
		if recent[i].Role != schemas.Tool {
			start = i // a step starts with the model's reply (or a note)
		}
	}
	kept := recent[start:]
	if start == len(recent) {
		// Not even the last step fits: keep it with its results cut.
		kept = shrinkLastStep(recent, room)
	}
	cut := len(all) - len(kept)
	if cut <= 0 {
		return kept
	}
	note := condense(all[:cut], max(budget-fixed-tokensOf(kept)-8, 0)*charsPerToken)
	return append([]schemas.Message{schemas.UserMessage(note)}, kept...)
}

func tokensOf(msgs []schemas.Message) int {
	n := 0
	for _, m := range msgs {
		n += messageTokens(m)
	}
	return n
}

// shrinkLastStep is the last step of msgs (the model's reply and its
// results) with each result cut so that the step fits in room tokens.
func shrinkLastStep(msgs []schemas.Message, room int) []schemas.Message {
	start := len(msgs) - 1
	for start > 0 && msgs[start].Role == schemas.Tool {
		start--
	}
	step := append([]schemas.Message(nil), msgs[start:]...)
	results := 0
	for _, m := range step {
		if m.Role == schemas.Tool {
			results++
		}
	}
	if results == 0 {
		return step
	}
	per := max(room*charsPerToken/results, 500)
	for i, m := range step {
		if m.Role == schemas.Tool && len(m.Content) > per {
			step[i].Content = cutText(m.Content, per)
		}
	}
	return step
}

var (
	// sourceLine is a label line of a result's sources note.
	sourceLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\[S\d+\] \S+.*$`) })
	// fenceTag is the opening or closing tag of a fenced tool output.
	fenceTag = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`</?tool_output[^>]*>`) })
)

// condense summarises msgs in at most limit characters: a line per step,
// the start of each result, every source label, and the latest plan whole.
func condense(msgs []schemas.Message, limit int) string {
	var steps []string
	var labels []string
	seen := map[string]bool{}
	plan := ""
	step := 0
	for _, m := range msgs {
		switch {
		case m.Role == schemas.Assistant:
			step++
			line := fmt.Sprintf("Step %d:", step)
			if t := oneLine(m.Content); t != "" {
				line += " " + cutText(t, 300)
			}
			for _, c := range m.ToolCalls {
				line += fmt.Sprintf(" [called %s %s]", c.Name, cutText(oneLine(canonicalJSON(c.Arguments)), 150))
			}
			steps = append(steps, line)
		case m.Role == schemas.Tool:
			body := m.Content
			for _, l := range sourceLine().FindAllString(body, -1) {
				if !seen[l] {
					seen[l] = true
					labels = append(labels, l)
				}
			}
			if i := strings.Index(body, "\nSources in this result"); i >= 0 {
				body = body[:i]
			}
			body = oneLine(fenceTag().ReplaceAllString(body, ""))
			if m.Name == tools.PlanningName {
				plan = body
			}
			steps = append(steps, fmt.Sprintf("  → %s: %s", m.Name, cutText(body, 300)))
		case m.Role == schemas.User:
			if !strings.HasPrefix(m.Content, "Context note:") {
				steps = append(steps, "  (note: "+cutText(oneLine(m.Content), 200)+")")
			} else {
				// An earlier condensed note: keep its labels and plan.
				for _, l := range sourceLine().FindAllString(m.Content, -1) {
					if !seen[l] {
						seen[l] = true
						labels = append(labels, l)
					}
				}
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, condenseNote, len(msgs))
	if len(labels) > 0 {
		b.WriteString("Sources found so far:\n" + strings.Join(labels, "\n") + "\n\n")
	}
	if plan != "" {
		b.WriteString("The current plan: " + cutText(plan, 3000) + "\n\n")
	}
	b.WriteString("Earlier steps:\n")
	head := b.Len()
	// The newest steps are the most useful: drop the oldest lines first.
	var lines []string
	size := head
	for i := len(steps) - 1; i >= 0; i-- {
		if size+len(steps[i])+1 > limit {
			lines = append(lines, "(older steps omitted)")
			break
		}
		size += len(steps[i]) + 1
		lines = append(lines, steps[i])
	}
	for i := len(lines) - 1; i >= 0; i-- {
		b.WriteString(lines[i] + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// contextOverflow reports whether err is a provider refusing a request as
// longer than the model's context window.
func contextOverflow(err error) bool {
	if err == nil || !errors.Is(err, llm.ErrBadRequest) {
		return false
	}
	return reOverflow().MatchString(err.Error())
}

var reOverflow = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)context[ _-]?length|context window|maximum context|too many tokens|prompt is too long|input is too long|exceeds? the (?:maximum|max)|token limit|input token count`)
})

// EstimateTokens is the agent's estimate of the tokens of a prompt: its
// messages and the tool definitions offered with them (one token per four
// characters). AgentConfig.ContextTokens bounds it.
func EstimateTokens(msgs []schemas.Message, defs []schemas.ToolDef) int {
	return estimateTokens(msgs, defs)
}
