package app

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research"
)

// ActivityLine is the timeline line of a research activity, as the CLI
// prints it and the server streams it: "Queries: …", "Searched …: 6
// sources (…)", "Reflection 1: not sufficient — gap: …", "Warning: …". It
// is "" for activities that only change what is in progress (searching,
// reflecting) and for answer tokens. Untrusted text in it (queries,
// labels, gaps, errors, warnings) is folded onto one line and cut.
func ActivityLine(a research.Activity) string {
	switch a.Kind {
	case research.ActivityGenerating:
		return "Generating search queries"
	case research.ActivityQueries:
		if len(a.Queries) == 0 {
			return "No queries to search: the answer is written from what was gathered"
		}
		return "Queries: " + QuoteList(a.Queries)
	case research.ActivitySearched:
		msg := fmt.Sprintf("Searched %s: %s", strconv.Quote(OneLine(a.Query, 80)), Plural(a.Sources, "source", "sources"))
		if len(a.Labels) > 0 {
			labels := make([]string, len(a.Labels))
			for i, l := range a.Labels {
				labels[i] = OneLine(l, 30)
			}
			msg += " (" + strings.Join(labels, ", ") + ")"
		}
		return msg
	case research.ActivityReflected:
		return reflectionLine(a)
	case research.ActivityFinalizing:
		return "Finalizing the answer"
	case research.ActivityAnswered:
		cited := Plural(a.Cited, "source", "sources") + " cited"
		if a.Cited == 0 {
			cited = "no source cited"
		}
		return fmt.Sprintf("Answer: %s, %s dropped", cited, Plural(a.Dropped, "citation", "citations"))
	case research.ActivityFailed:
		return fmt.Sprintf("%s failed: %s", a.Node, OneLine(nodeErrPrefix().ReplaceAllString(a.Error, ""), 200))
	case research.ActivityWarning:
		if a.Warning != nil {
			msg := "Warning: " + OneLine(a.Warning.Message, 300)
			if a.Warning.Kind == research.WarningPagesRefused {
				msg += " (" + AllowPrivateHint + ")"
			}
			return msg
		}
	case research.ActivityReview:
		return "Waiting for a review of " + Plural(len(a.Queries), "query", "queries") + ": " + QuoteList(a.Queries)
	}
	return ""
}

// nodeErrPrefix is the graph engine's wrapping of a node's error, which the
// timeline line already says.
var nodeErrPrefix = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^graph: node "[^"]*" failed in step \d+( after \d+ attempts)?: `)
})

func reflectionLine(a research.Activity) string {
	msg := fmt.Sprintf("Reflection %d: ", a.Loop)
	r := a.Reflection
	if r == nil {
		return msg + "done"
	}
	if r.IsSufficient {
		return msg + "sufficient"
	}
	msg += "not sufficient"
	if gap := OneLine(r.KnowledgeGap, 160); gap != "" {
		msg += " — gap: " + gap
	}
	if len(a.Queries) > 0 {
		return msg + "; follow-ups: " + QuoteList(a.Queries)
	}
	return msg + "; answering with what was found (loop limit reached or nothing new to search)"
}

// AgentLines are the lines of an agent step, as the CLI prints them: the
// thought and each tool call; a tool's result; a nudge; the end.
func AgentLines(ev nodes.AgentEvent) []string {
	switch ev.Kind {
	case nodes.AgentEventThink:
		lines := []string{fmt.Sprintf("Step %d", ev.Step)}
		if t := OneLine(ev.Thought, 240); t != "" {
			lines[0] += ": " + t
		}
		for _, call := range ev.Calls {
			lines = append(lines, fmt.Sprintf("  → %s %s", OneLine(call.Name, 40), OneLine(string(call.Arguments), 200)))
		}
		return lines
	case nodes.AgentEventAct:
		mark := "←"
		if ev.Failed {
			mark = "✗"
		}
		return []string{fmt.Sprintf("  %s %s (%.1fs): %s", mark, OneLine(ev.Tool, 40), ev.Duration.Seconds(), OneLine(ev.Output, 200))}
	case nodes.AgentEventNudge:
		return []string{"  ! the agent repeated itself and was told to change strategy"}
	case nodes.AgentEventDone:
		return []string{"Done: " + string(ev.Status)}
	}
	return nil
}

// QuoteList quotes queries for one line: "a" · "b".
func QuoteList(qs []string) string {
	parts := make([]string, len(qs))
	for i, q := range qs {
		parts[i] = strconv.Quote(OneLine(q, 80))
	}
	return strings.Join(parts, " · ")
}

// Plural writes a count with its noun: "1 source", "3 sources".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// AllowPrivateHint says how to read the pages the network guard refuses.
const AllowPrivateHint = "--allow-private-urls lets pages on private and loopback addresses be read"

// PageRefused reports whether an agent step is a tool call whose page the
// network guard refused to read (fetch_page's "Error: cannot read URL:
// refused: …"), for a hint to the user: the model is not told how to lift
// the guard.
func PageRefused(ev nodes.AgentEvent) bool {
	out := strings.TrimPrefix(ev.Output, "Error: ")
	return ev.Kind == nodes.AgentEventAct && ev.Failed && strings.HasPrefix(out, "cannot read ") && strings.Contains(out, ": refused: ")
}
