package nodes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/fence"
	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/tools"
)

// MaxLoopPeriod is the longest cycle of steps the agent's stuck rule
// catches.
//
// The rule: each step is recorded as what it did and what came of it — its
// tool calls (names and canonical arguments) with their results, or its
// text when it made no call. The agent is going round in circles when the
// last p records, for a period p from 1 to MaxLoopPeriod, equal the p
// records before them: the same call with the same result twice in a row
// (p = 1), A B A B (p = 2), up to six steps repeated in the same order
// with the same results. A call repeated after something changed is not a
// repeat — view, edit, view sees a different file the second time — and a
// cycle whose calls return something new each time is not a cycle.
// (OpenManus compares the model's replies alone: it stops an agent that
// re-reads a file it has just edited, and misses longer cycles.)
//
// The first repeat of an episode adds a message telling the model to
// change strategy (an AgentEventNudge); a repeat after that nudge, in the
// same episode, ends the run with AgentStuck. An episode ends when the
// agent makes progress — a step whose record is new in the run — so a
// later, unrelated loop gets a nudge of its own.
const MaxLoopPeriod = 6

// Polling is not being stuck: a step whose every result is a short status
// saying the awaited state is not there yet ("pending", "running", "in
// progress", "queued", "not ready"…) is waiting for something else to
// happen, and repeating it is what a job's status calls for. Such a step
// is recorded as new each time, so the stuck rule never counts it; the
// step limit still bounds the wait.
var rePending = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(pending|in[ _-]?progress|running|queued|processing|waiting|not (yet )?(ready|finished|done|complete|available))\b`)
})

// maxPendingLen is the longest result read as a status for the polling
// rule: a status is short; a page that says "running" is not one.
const maxPendingLen = 500

// polling reports whether every result says the state is pending.
func polling(results []tools.Result) bool {
	if len(results) == 0 {
		return false
	}
	for _, r := range results {
		c := r.Content()
		if r.Failed() || len(c) > maxPendingLen || !rePending().MatchString(c) {
			return false
		}
	}
	return true
}

// stepRecord identifies a step that made calls: the calls and their
// results, as a digest; a polling step (see polling) at step is new each
// time.
func stepRecord(calls []schemas.ToolCall, results []tools.Result, step int) string {
	if polling(results) {
		return fmt.Sprintf("poll:%d", step)
	}
	h := sha256.New()
	for i, c := range calls {
		fmt.Fprintf(h, "%s\x00%s\x00", c.Name, canonicalJSON(c.Arguments))
		if i < len(results) {
			fmt.Fprintf(h, "%t\x00%d\x00%s\x00", results[i].Failed(), len(results[i].Content()), results[i].Content())
		}
	}
	return "calls:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// textRecord identifies a step without calls by its text, in any case and
// spacing.
func textRecord(text string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.Join(strings.Fields(text), " "))))
	return "text:" + hex.EncodeToString(sum[:16])
}

// canonicalJSON is raw with its object keys sorted and no spaces, and
// characters such as < > & as they are (they are shown to people and
// models).
func canonicalJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return strings.TrimSpace(string(raw))
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // map keys come out sorted
	return strings.TrimSuffix(b.String(), "\n")
}

// loops reports whether the records end in a cycle: for a period p up to
// MaxLoopPeriod, the last p records equal the p before them.
func loops(records []string) bool {
	n := len(records)
	for p := 1; p <= MaxLoopPeriod && 2*p <= n; p++ {
		if slices.Equal(records[n-p:], records[n-2*p:n-p]) {
			return true
		}
	}
	return false
}

// loopVerdict is what the stuck rule makes of a step.
type loopVerdict int

const (
	loopOK    loopVerdict = iota // no repeat
	loopNudge                    // the first repeat of an episode
	loopStuck                    // a repeat after the episode's nudge
)

// loopRule records a step (rec) and applies the stuck rule to it: the
// writes keep the record and the episode's nudge.
func loopRule(s AgentState, rec string) ([]graph.Write[AgentState], loopVerdict) {
	writes := []graph.Write[AgentState]{aSignatures.Add(rec)}
	switch {
	case loops(append(slices.Clip(s.Signatures), rec)):
		if s.Nudged {
			return writes, loopStuck
		}
		return append(writes, aNudged.Set(true)), loopNudge
	case s.Nudged && !slices.Contains(s.Signatures, rec):
		return append(writes, aNudged.Set(false)), loopOK // progress ends the episode
	}
	return writes, loopOK
}

// stuckAnswer is the answer of a run stopped as stuck when the model wrote
// none: its last reply and the labels of the sources it gathered (n), so
// that they are cited.
func stuckAnswer(step int, reply string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The agent stopped at step %d: it repeated itself after being told to change strategy.", step)
	if r := strings.TrimSpace(reply); r != "" {
		b.WriteString(" Its last reply: " + r)
	}
	if n > 0 {
		b.WriteString("\n\nSources it gathered:")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, " [S%d]", i)
		}
	}
	return b.String()
}

// MaxEventOutput caps the characters of a tool result an AgentEvent
// carries — what observers, graph streams, the CLI's timeline and the
// server's event stream get: a preview, cut like the model's observation
// (AgentConfig.MaxToolOutput) with a note of the full length.
const MaxEventOutput = 4000

// cutText keeps the first limit characters of s and, when it cuts, says
// so. It reads s only up to the cut and counts the rest.
func cutText(s string, limit int) string {
	if len(s) <= limit {
		return s // no more characters than bytes
	}
	i := 0
	for n := 0; n < limit && i < len(s); n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if i >= len(s) {
		return s
	}
	return s[:i] + fmt.Sprintf("\n[output cut: showing %d of %d characters]", limit, limit+utf8.RuneCountInString(s[i:]))
}

// Fences of untrusted text in the agent's and the flow's prompts; each
// neutralises the other's tags too, as a step's result may hold tool
// output and the reverse.
var (
	toolOutputFence = fence.New("tool_output", "step_result")
	stepResultFence = fence.New("step_result", "tool_output")
)

// fenceOutput marks tool output as untrusted data, so that text inside it
// cannot pose as the end of the fence.
func fenceOutput(tool, content string) string {
	return toolOutputFence.Wrap(fmt.Sprintf("tool=%q untrusted=\"true\"", tool), content)
}

// states are the messages showing the model the current state of the
// agent's state sources (AgentConfig.States), fenced like tool output and
// cut like it. They are Transient: a provider's prompt cache ends before
// them, since the next step shows a new state instead.
func (a *Agent) states(ctx context.Context) []schemas.Message {
	var msgs []schemas.Message
	for _, src := range a.cfg.States {
		st := strings.TrimSpace(src.State(ctx))
		if st == "" {
			continue
		}
		name := src.Name()
		fenced := toolOutputFence.Wrap(fmt.Sprintf("tool=%q kind=\"state\" untrusted=\"true\"", name), cutText(st, a.cfg.MaxToolOutput))
		msgs = append(msgs, schemas.Message{Role: schemas.User, Content: "The current state of " + name + ", for your next step (it replaces any earlier state):\n" + fenced, Transient: true})
	}
	return msgs
}

// maxPartialCalls caps the calls a failed run's partial result lists.
const maxPartialCalls = 30

// partialOf is what a run that failed had done by then — its calls, its
// last reply and the sources it gathered — with its citations checked
// against those sources like an answer's; "" when it had done nothing.
func partialOf(s AgentState, textMode bool) (string, []citation.Source) {
	var calls []string
	reply := ""
	step := 0
	for _, m := range s.Messages {
		if m.Role != schemas.Assistant {
			continue
		}
		step++
		text, cs := m.Content, m.ToolCalls
		if textMode {
			if p, err := parseTextStep(m.Content, step); err == nil {
				text, cs = p.thought, p.calls
				if p.final != "" {
					text = p.final
				}
			}
		}
		if t := strings.TrimSpace(text); t != "" {
			reply = t
		}
		for _, c := range cs {
			call := strings.ReplaceAll(c.Name+" "+cutText(canonicalJSON(c.Arguments), 200), "`", "'")
			calls = append(calls, fmt.Sprintf("- step %d: `%s`", step, strings.Join(strings.Fields(call), " ")))
		}
	}
	if len(calls) == 0 && reply == "" && len(s.Sources) == 0 {
		return "", nil
	}
	var b strings.Builder
	b.WriteString("The run stopped before the task was done. What it had done by then:")
	if len(calls) > 0 {
		b.WriteString("\n\nTool calls:\n")
		if n := len(calls) - maxPartialCalls; n > 0 {
			fmt.Fprintf(&b, "- (%d earlier calls not shown)\n", n)
			calls = calls[n:]
		}
		b.WriteString(strings.Join(calls, "\n"))
	}
	if reply != "" {
		b.WriteString("\n\nIts last reply: " + reply)
	}
	if len(s.Sources) > 0 {
		b.WriteString("\n\nSources it gathered:")
		for i := range s.Sources {
			fmt.Fprintf(&b, " [S%d]", i+1)
		}
	}
	text, cited, _ := citeAnswer(b.String(), s.Sources)
	return text, cited
}
