package main

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/search"
	"github.com/deepgraph/deepgraph/search/netguard"
)

// errorLines renders err as the lines printed after "research: ": one per
// line of its message (configuration problems come all at once, one per
// line), without the graph engine's wrapping and without a panic's stack
// unless verbose.
func errorLines(err error, verbose bool) []string {
	var lines []string
	var pe *graph.PanicError
	if errors.As(err, &pe) && !verbose {
		return []string{fmt.Sprintf("internal error: panic: %v (run with -v for the stack, and please report it)", pe.Value)}
	}
	msg := err.Error()
	var ne *graph.NodeError
	if errors.As(err, &ne) {
		msg = fmt.Sprintf("%s failed: %v", ne.Node, ne.Err)
	}
	for _, l := range strings.Split(userText(msg), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, oneLine(l, 0))
		}
	}
	return lines
}

// internalPrefix matches the names of this program's Go packages that its
// errors start with ("runstore: no such run: …"): they mean nothing to the
// person reading the message, which says what went wrong without them.
// Names of providers and of what failed (gemini:, searxng:, search:,
// mcp:) stay.
var internalPrefix = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(^|: |\(|; )(?:runstore|graph|temporalgraph|temporalresearch|nodes|netguard|mcpserver|httpx|telemetry|sqlite|postgres|checkpoint|llm|tools|local|app|config|research): `)
})

// userText drops internal package prefixes from an error message.
func userText(msg string) string {
	for {
		out := internalPrefix().ReplaceAllString(msg, "$1")
		if out == msg {
			return out
		}
		msg = out
	}
}

// hints suggests what to do about err.
func hints(err error) []string {
	var out []string
	switch {
	case errors.Is(err, llm.ErrAuth), errors.Is(err, search.ErrAuth):
		out = append(out, "check the key named above; `research config` shows where each key comes from")
	case errors.Is(err, llm.ErrRateLimited), errors.Is(err, search.ErrRateLimited):
		out = append(out, "the provider is rate limiting: try again later, use --effort low, or lower max_concurrency")
	case errors.Is(err, llm.ErrInvalidReply):
		out = append(out, "the model's replies did not match the requested JSON schema even after a re-ask: try a more capable model (--query-model / --reflection-model)")
	case errors.Is(err, llm.ErrTimeout):
		out = append(out, "raise llm_timeout (--llm-timeout) or use a faster model")
	case errors.Is(err, research.ErrSearchesFailed):
		out = append(out, "every search failed (the errors above say why): the search provider is down or refuses the key; check it with `research config`, or list a fallback with --search (e.g. searxng,tavily), then `research resume` the run")
	case errors.Is(err, search.ErrUnavailable):
		out = append(out, "the search provider is down or unreachable: check its URL, or list a fallback with --search (e.g. searxng,tavily)")
	case errors.Is(err, llm.ErrUnavailable):
		out = append(out, "the model provider is down or unreachable: check its base URL and try again")
	case errors.Is(err, netguard.ErrBlocked):
		out = append(out, "set --allow-private-urls to read pages on private or loopback addresses")
	}
	return out
}
