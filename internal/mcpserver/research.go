package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/research"
)

// ResearchInput is the arguments of deep_research.
type ResearchInput struct {
	Question string `json:"question" jsonschema:"The question to research, with the context an expert would need: one question per call."`
	Effort   string `json:"effort,omitempty"`
}

// ResearchOutput is the structured result of deep_research; its text
// result is the same report in Markdown.
type ResearchOutput struct {
	Question string `json:"question" jsonschema:"The question researched."`
	Answer   string `json:"answer" jsonschema:"The answer in Markdown. Its citations are numbered links [n](url) into sources."`
	// Sources are numbered from 1 in this order.
	Sources []Source `json:"sources" jsonschema:"The cited sources: citation [n] is the n-th."`
	Queries []string `json:"queries" jsonschema:"The search queries that ran."`
	Loops   int      `json:"loops" jsonschema:"How many rounds of research (reflections) ran."`
	// Incomplete is set when the run stopped before its final answer.
	Incomplete bool `json:"incomplete" jsonschema:"True when the research stopped before its final answer: the answer is then what was gathered so far."`
}

// Source is a cited source.
type Source struct {
	URL   string `json:"url" jsonschema:"The source's address."`
	Title string `json:"title,omitempty" jsonschema:"The source's title, or a label naming its site."`
}

// errTimeout is the cancellation cause of Options.Timeout.
var errTimeout = errors.New("research timeout")

func (s *handlers) addDeepResearch(srv *mcp.Server) error {
	in, err := jsonschema.For[ResearchInput](nil)
	if err != nil {
		return fmt.Errorf("mcpserver: the deep_research input schema: %w", err)
	}
	// The limit is said, not declared as maxLength: the SDK's validation
	// error would quote the whole question back; the handler's says how long
	// it was.
	q := in.Properties["question"]
	q.Description += fmt.Sprintf(" At most %d characters.", s.opts.MaxQuestion)
	ef := in.Properties["effort"]
	var names, presets []string
	for _, e := range research.Efforts() {
		ef.Enum = append(ef.Enum, e.Name)
		names = append(names, e.Name)
		presets = append(presets, fmt.Sprintf("%s: %s a round, at most %s", e.Name, app.Plural(e.Queries, "query", "queries"), app.Plural(e.Loops, "round", "rounds")))
	}
	ef.Description = "How broad and deep to research (" + strings.Join(presets, "; ") + ")."
	if s.opts.DefaultEffort != "" {
		ef.Description += " Default: " + s.opts.DefaultEffort + ", as this server is configured."
	}
	desc := "Research a question on the web (or the server's corpus) and answer it with verified citations: deepgraph writes search queries, " +
		"searches and reads the results in parallel, reflects on what is missing and searches again, then writes an answer whose " +
		"numbered citations [n](url) are checked against the sources it gathered. Returns the report in Markdown — the answer, then its " +
		"Sources list — and the same as structured data. A run takes from under a minute to several minutes (effort " + strings.Join(names, ", ") +
		"); it sends progress notifications when asked for them, and stops when the call is cancelled."
	mcp.AddTool(srv, &mcp.Tool{Name: DeepResearchName, Title: "Deep research", Description: desc, InputSchema: in,
		Annotations: readOnly("Deep research")}, s.deepResearch)
	return nil
}

// deepResearch is the deep_research handler. Failures are tool errors
// (IsError) with a clear message; a run that failed after gathering
// something also returns what it gathered, marked incomplete.
func (s *handlers) deepResearch(ctx context.Context, req *mcp.CallToolRequest, in ResearchInput) (*mcp.CallToolResult, *ResearchOutput, error) {
	question := strings.TrimSpace(in.Question)
	if question == "" {
		return nil, nil, errors.New("the question is empty: ask a question")
	}
	if n := utf8.RuneCountInString(question); n > s.opts.MaxQuestion {
		return nil, nil, fmt.Errorf("the question is %d characters long; this server takes at most %d", n, s.opts.MaxQuestion)
	}
	var opts []research.RunOption
	if in.Effort != "" {
		ef, err := research.EffortByName(in.Effort)
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts, research.InitialQueries(ef.Queries), research.MaxLoops(ef.Loops))
	}
	ctx, cancel := s.callContext(ctx)
	defer cancel()
	if s.opts.Timeout > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeoutCause(ctx, s.opts.Timeout, errTimeout)
		defer cancelT()
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		return nil, nil, errors.New(s.stopped(ctx, "waiting for a free slot"))
	}
	r, err := s.opts.Research(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, errors.New(s.stopped(ctx, "starting"))
		}
		return nil, nil, fmt.Errorf("deep_research could not start: %s", s.text(err))
	}
	s.log.Debug("deep_research", "question", app.OneLine(question, 200), "effort", in.Effort)
	opts = append(opts, research.Observe(s.progress(ctx, req)))
	rep, err := r.Run(ctx, question, opts...)
	if err != nil {
		msg := "deep_research failed: " + s.text(err)
		if ctx.Err() != nil {
			msg = s.stopped(ctx, "running")
		}
		if rep == nil || (strings.TrimSpace(rep.Answer) == "" && len(rep.Sources) == 0) {
			return nil, nil, errors.New(msg)
		}
		// What was gathered is worth having: the report, marked incomplete,
		// after the error.
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{
			&mcp.TextContent{Text: msg + ". What was gathered before it stopped follows."},
			&mcp.TextContent{Text: app.CleanText(rep.Markdown())},
		}}, output(rep), nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: app.CleanText(rep.Markdown())}}}, output(rep), nil
}

// stopped says why a call's context ended while it was doing what.
func (s *handlers) stopped(ctx context.Context, doing string) string {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errTimeout):
		return fmt.Sprintf("deep_research did not finish within this server's timeout of %s (the research stopped while %s)", s.opts.Timeout, doing)
	case errors.Is(cause, errShutdown):
		return fmt.Sprintf("deep_research stopped while %s: the server is shutting down; ask again when it is back", doing)
	default:
		return fmt.Sprintf("deep_research was cancelled while %s", doing)
	}
}

// text is an error's message for the client: one line, secrets masked.
func (s *handlers) text(err error) string {
	return s.opts.Redact(app.OneLine(err.Error(), 1000))
}

// progress returns the observer that sends a progress notification per
// timeline line — the lines the CLI prints — when the client asked for
// progress with a token.
func (s *handlers) progress(ctx context.Context, req *mcp.CallToolRequest) func(research.Activity) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func(research.Activity) {}
	}
	n := 0
	return func(a research.Activity) {
		line := app.ActivityLine(a)
		if line == "" {
			return
		}
		n++
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: s.opts.Redact(line)})
		if err != nil && ctx.Err() == nil {
			s.log.Debug("a progress notification was not sent", "err", err)
		}
	}
}

// output is the structured form of a report.
func output(rep *research.Report) *ResearchOutput {
	out := &ResearchOutput{Question: rep.Question, Answer: rep.Answer, Sources: []Source{}, Queries: rep.Queries,
		Loops: rep.Loops, Incomplete: rep.Incomplete}
	if out.Queries == nil {
		out.Queries = []string{}
	}
	for _, src := range rep.Sources {
		title := src.Title
		if title == "" {
			title = src.Label
		}
		out.Sources = append(out.Sources, Source{URL: src.URL, Title: title})
	}
	return out
}
