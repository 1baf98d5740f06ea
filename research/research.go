package research

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/schemas"
)

// Node names of the deep-search graph.
const (
	NodeGenerateQuery  = "generate_query"
	NodeWebResearch    = "web_research"
	NodeReflection     = "reflection"
	NodeFinalizeAnswer = "finalize_answer"
)

// Defaults of Config.
const (
	DefaultInitialQueries = 3
	DefaultMaxLoops       = 2
)

// Config configures a Researcher.
type Config struct {
	// QueryModel writes the search queries; it is required. ResearchModel
	// (web research), ReflectionModel and AnswerModel default to it.
	QueryModel      llm.Model
	ResearchModel   llm.Model
	ReflectionModel llm.Model
	AnswerModel     llm.Model
	// Backend does the web research of one query: GeminiBackend (Google
	// Search grounding) or SearchBackend (any model plus a search API or a
	// local corpus). Required.
	Backend Backend
	// InitialQueries is the most queries the first round searches (default
	// 3); it also caps the follow-up queries of each later round.
	InitialQueries int
	// MaxLoops is the most reflections per question (default 2): with 1,
	// the first round is the only one.
	MaxLoops int
	// MaxConcurrency bounds the web research tasks running at once (default:
	// graph.DefaultMaxConcurrency, 64 — more than a round's queries, so a
	// round runs at once; the providers' own limits bound their calls).
	MaxConcurrency int
	// ContextBudget bounds, in tokens (CharsPerToken characters each), the
	// findings the answer prompt holds; the reflection prompt holds a third
	// of it. Beyond it, findings are condensed into notes by the
	// CompactionModel and the newest are shown in full first (see the
	// package doc). Default: DefaultContextBudgetFor(AnswerModel).
	ContextBudget int
	// ResearchBudget bounds, in tokens (CharsPerToken characters each),
	// each research (summary) prompt: a back end that reads pages
	// (SearchBackend) shortens the sources' text to fit, fairly across
	// them. Default: ResearchBudgetFor the run's queries and loops, so
	// that a run's research prompts together stay within about
	// RunResearchBudget tokens.
	ResearchBudget int
	// CompactionModel condenses findings to fit the context budget; it
	// defaults to ReflectionModel.
	CompactionModel llm.Model
	// Checkpointer stores runs so that Thread can continue a conversation.
	Checkpointer graph.Checkpointer
	// ModelRetry is how the nodes that call a model (generate_query,
	// web_research, reflection, finalize_answer) retry a failed call; nil
	// means nodes.DefaultModelRetry (transient errors: rate limits,
	// outages, cut streams), &graph.RetryPolicy{MaxAttempts: 1} turns
	// retries off (see nodes.ModelRetry).
	ModelRetry *graph.RetryPolicy
	// Now is the clock for the prompts' "today" (default time.Now).
	Now func() time.Time
}

// Backend researches one query: searches, reads and summarises with
// citation markers, returning the summary and the sources its markers point
// to. The model is the research model, metered for the run.
type Backend interface {
	Research(ctx context.Context, model llm.Model, q Query) (Finding, error)
	// Name identifies the back end in errors and reports.
	Name() string
}

// Query is one query to research.
type Query struct {
	Text  string // the search query
	ID    int    // its index among the turn's queries; citation ids derive from it
	Topic string // the question being researched
	Date  string // today, formatted for prompts
	// Budget bounds, in tokens (CharsPerToken characters each), the
	// prompt that summarises the query's sources: a back end that reads
	// pages shortens their text to fit (see Config.ResearchBudget); 0
	// means no bound beyond the back end's own.
	Budget int
}

// Researcher runs the deep-search graph.
type Researcher struct {
	cfg   Config
	graph *graph.Compiled[State]
}

// New checks cfg and builds the graph.
func New(cfg Config) (*Researcher, error) {
	if cfg.QueryModel == nil {
		return nil, fmt.Errorf("research: %w: set Config.QueryModel", llm.ErrNoModel)
	}
	if cfg.Backend == nil {
		return nil, errors.New("research: Config.Backend is required: GeminiBackend for Google Search grounding, or SearchBackend with a search provider")
	}
	cfg.Backend = withSourceResolver(cfg.Backend)
	for _, m := range []*llm.Model{&cfg.ResearchModel, &cfg.ReflectionModel, &cfg.AnswerModel} {
		if *m == nil {
			*m = cfg.QueryModel
		}
	}
	if cfg.CompactionModel == nil {
		cfg.CompactionModel = cfg.ReflectionModel
	}
	if cfg.ContextBudget <= 0 {
		cfg.ContextBudget = DefaultContextBudgetFor(cfg.AnswerModel)
	}
	if cfg.InitialQueries <= 0 {
		cfg.InitialQueries = DefaultInitialQueries
	}
	if cfg.MaxLoops <= 0 {
		cfg.MaxLoops = DefaultMaxLoops
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Researcher{cfg: cfg}
	g, err := r.build()
	if err != nil {
		return nil, err
	}
	r.graph = g
	return r, nil
}

// Graph returns the compiled deep-search graph, e.g. for Mermaid().
func (r *Researcher) Graph() *graph.Compiled[State] { return r.graph }

func (r *Researcher) build() (*graph.Compiled[State], error) {
	g := graph.New[State](stateFields()...)
	retry := nodes.ModelRetry(r.cfg.ModelRetry) // the nodes that call a model
	answerBudget, reflectionBudget := r.budgetChars()
	g.AddNode(NodeGenerateQuery, nodes.Structured[State, schemas.SearchQueryList]{
		Model:   r.cfg.QueryModel,
		Role:    llm.RoleQuery,
		Prompt:  r.queryPrompt,
		Write:   r.startTurn,
		Options: []llm.Option{llm.Temperature(1)},
		Usage:   fUsage,
	}.Node(), retry)
	graph.AddTask(g, NodeWebResearch, r.webResearch, retry)
	reflection := func(opts ...llm.Option) graph.NodeFunc[State] {
		return nodes.Structured[State, schemas.Reflection]{
			Model:   r.cfg.ReflectionModel,
			Role:    llm.RoleReflection,
			Prompt:  r.reflectionPrompt,
			Write:   r.reflect,
			Options: append([]llm.Option{llm.Temperature(1)}, opts...),
			Usage:   fUsage,
		}.Node()
	}
	g.AddNode(NodeReflection, r.withSearches(r.withBudget(r.cacheIfResent(reflection(), reflection(llm.CachePrompt())), reflectionBudget)), retry)
	g.AddNode(NodeFinalizeAnswer, r.withBudget(nodes.Generate[State]{
		Model:   r.cfg.AnswerModel,
		Role:    llm.RoleAnswer,
		Prompt:  r.answerPrompt,
		Write:   r.finalize,
		Options: []llm.Option{llm.Temperature(0)},
		Usage:   fUsage,
	}.Node(), answerBudget), retry)

	g.AddNode(NodeReviewQueries, r.reviewQueries)

	g.AddEdge(graph.Start, NodeGenerateQuery)
	g.AddConditional(NodeGenerateQuery, r.afterQueries, NodeWebResearch, NodeReviewQueries)
	g.AddEdge(NodeWebResearch, NodeReflection)
	g.AddConditional(NodeReflection, r.evaluateResearch, NodeWebResearch, NodeReviewQueries, NodeFinalizeAnswer)
	g.AddConditional(NodeReviewQueries, r.afterReview, NodeWebResearch, NodeFinalizeAnswer)
	g.AddEdge(NodeFinalizeAnswer, graph.End)

	opts := []graph.Option{graph.WithMaxConcurrency(r.cfg.MaxConcurrency), graph.WithRecursionLimit(3*r.maxLoopsCap() + 4)}
	if r.cfg.Checkpointer != nil {
		opts = append(opts, graph.WithCheckpointer(r.cfg.Checkpointer))
	}
	return g.Compile(opts...)
}

// maxLoopsCap bounds the loops any run may ask for, for the recursion limit
// (each loop takes up to three steps: review, research, reflection).
func (r *Researcher) maxLoopsCap() int { return max(r.cfg.MaxLoops, maxRunLoops) }

// maxRunLoops is the most loops a run can ask for with the Loops option.
const maxRunLoops = 50

func (r *Researcher) limits(s State) (queries, loops int) {
	queries, loops = r.cfg.InitialQueries, r.cfg.MaxLoops
	if s.InitialQueries > 0 {
		queries = s.InitialQueries
	}
	if s.MaxLoops > 0 {
		loops = min(s.MaxLoops, maxRunLoops)
	}
	return queries, loops
}

func (r *Researcher) today() string { return formatDate(r.cfg.Now()) }

func (r *Researcher) queryPrompt(s State) []schemas.Message {
	n, _ := r.limits(s)
	return []schemas.Message{schemas.UserMessage(fmt.Sprintf(queryWriterPrompt, n, r.today(), Topic(s.Messages)))}
}

// startTurn begins a turn with the generated queries: per-turn fields are
// reset (a follow-up question on a thread starts a fresh round, and counts
// its own usage: the query call's is merged after this reset) and the
// queries are cleaned, deduplicated and capped. A model that returns no
// usable query gets the question itself searched, so a run always has
// something to answer from.
func (r *Researcher) startTurn(s State, out schemas.SearchQueryList) graph.Update[State] {
	n, _ := r.limits(s)
	queries := newQueries(out.Query, nil, n)
	if len(queries) == 0 {
		queries = newQueries([]string{lastQuestion(s.Messages)}, nil, 1)
	}
	return graph.Writes(
		fQueries.Set(queries), fPending.Set(nil), fFindings.Set(nil), fLoops.Set(0),
		fNotes.Set(nil), fReflection.Set(schemas.Reflection{}), fAnswer.Set(""), fCited.Set(nil), fDropped.Set(0), fUsage.Set(nil),
	)
}

// afterQueries sends the first round's queries to web research, or to the
// review first.
func (r *Researcher) afterQueries(s State) graph.Route {
	if reviewing(s) {
		return graph.Goto(NodeReviewQueries)
	}
	return r.research(s, s.Queries)
}

// research sends queries — the last len(queries) of the turn's — to web
// research, one task each; a query's ID is its index in s.Queries.
func (r *Researcher) research(s State, queries []string) graph.Route {
	topic := Topic(s.Messages)
	budget := r.researchBudget(s)
	first := len(s.Queries) - len(queries)
	sends := make([]graph.Send, len(queries))
	for i, q := range queries {
		sends[i] = graph.Send{Node: NodeWebResearch, Arg: Task{Query: q, ID: first + i, Topic: topic, Budget: budget}}
	}
	return graph.Sends(sends...)
}

func (r *Researcher) webResearch(ctx context.Context, t Task) (graph.Update[State], error) {
	meter := new(llm.Meter)
	model := llm.Metered(r.cfg.ResearchModel, meter, llm.RoleResearch)
	if _, ok := r.cfg.Backend.(SourceFinisher); ok {
		ctx = withDeferredSources(ctx) // finalize finishes the sources
	}
	f, err := r.cfg.Backend.Research(ctx, model, Query{Text: t.Query, ID: t.ID, Topic: t.Topic, Date: r.today(), Budget: t.Budget})
	if err != nil {
		err = fmt.Errorf("researching %q with %s: %w", t.Query, r.cfg.Backend.Name(), err)
		return graph.Update[State]{}, nodes.FailWithUsage(ctx, err, meter.Snapshot())
	}
	f.Query, f.ID = t.Query, t.ID
	for _, w := range f.Warnings {
		graph.Emit(ctx, w) // on the timeline as it happens (Describe)
	}
	return graph.Writes(fFindings.Add(f), fUsage.Merge(meter.Snapshot())), nil
}

// reflectionPrompt is the head, the findings and the tail (see
// reflectionHead) in one message, or, when the reflection is cached
// (cachesReflection), laid out for caches that end a prefix at a block
// boundary (Anthropic): the head, one message per finding, each its own
// <untrusted> element, and the Transient tail.
func (r *Researcher) reflectionPrompt(s State) []schemas.Message {
	gap := s.Reflection.KnowledgeGap
	if gap == "" {
		gap = "(none yet)"
	}
	_, budget := r.budgetChars()
	ft := fit(s.Findings, s.Notes, budget)
	head := fmt.Sprintf(reflectionHead, Topic(s.Messages), r.today(), untrustedNote)
	omitted := ""
	if ft.omitted > 0 {
		omitted = ft.omittedNote() + "\n\n"
	}
	tail := fmt.Sprintf(reflectionTail, omitted, bulletList(s.Queries), untrusted.Wrap("", gap))
	if !r.cachesReflection(s) {
		return []schemas.Message{schemas.UserMessage(head + "\n" + untrusted.Wrap("", strings.Join(ft.parts(), "\n\n---\n\n")) + "\n\n" + tail)}
	}
	msgs := []schemas.Message{schemas.UserMessage(head)}
	for _, p := range ft.parts() {
		msgs = append(msgs, schemas.UserMessage(untrusted.Wrap("", p)))
	}
	return append(msgs, schemas.Message{Role: schemas.User, Content: tail, Transient: true})
}

// cachesReflection says whether the reflection of s asks for its prompt's
// head and findings to be cached (llm.CachePrompt), for the next
// reflection of the turn, which resends them, to read: when the turn may
// have more than one reflection and the findings fit the reflection's
// budget in full — condensed or left out, they change from one reflection
// to the next. The first reflection, which has nothing to read, caches
// only when another round as large would fit too: a cache write costs
// more than plain input.
func (r *Researcher) cachesReflection(s State) bool {
	_, loops := r.limits(s)
	_, budget := r.budgetChars()
	size := summariesLen(s.Findings)
	if s.Loops == 0 {
		size *= 2
	}
	return loops > 1 && size <= budget
}

// cacheIfResent runs cached — the reflection with llm.CachePrompt — when
// cachesReflection, else plain.
func (r *Researcher) cacheIfResent(plain, cached graph.NodeFunc[State]) graph.NodeFunc[State] {
	return func(ctx context.Context, s State) (graph.Update[State], error) {
		if r.cachesReflection(s) {
			return cached(ctx, s)
		}
		return plain(ctx, s)
	}
}

// reflect records the reflection and decides the next round: follow-up
// queries that were not searched yet in this turn, at most InitialQueries of
// them, unless the summaries are sufficient or the loop limit is reached.
func (r *Researcher) reflect(s State, out schemas.Reflection) graph.Update[State] {
	n, maxLoops := r.limits(s)
	loops := s.Loops + 1
	var pending []string
	if !out.IsSufficient && loops < maxLoops {
		pending = newQueries(out.FollowUpQueries, s.Queries, n)
	}
	return graph.Writes(fLoops.Set(loops), fReflection.Set(out), fPending.Set(pending), fQueries.Add(pending...))
}

// evaluateResearch routes to another round of web research for the pending
// follow-ups (through the review when the turn has one), or to the answer.
// "Not sufficient" without any new follow-up query finalises: a run never
// ends without an answer.
func (r *Researcher) evaluateResearch(s State) graph.Route {
	switch {
	case len(s.Pending) == 0:
		return graph.Goto(NodeFinalizeAnswer)
	case reviewing(s):
		return graph.Goto(NodeReviewQueries)
	}
	return r.research(s, s.Pending)
}

func (r *Researcher) answerPrompt(s State) []schemas.Message {
	budget, _ := r.budgetChars()
	return []schemas.Message{schemas.UserMessage(fmt.Sprintf(answerPrompt, r.today(), untrustedNote, Topic(s.Messages), fencedFindings(s, budget, "\n---\n\n")))}
}

// finalize keeps only the citations that point to sources gathered in this
// turn and numbers them; the back end finishes the sources first (Gemini's
// redirects resolved meanwhile show the real pages).
func (r *Researcher) finalize(s State, resp *llm.Response) graph.Update[State] {
	res := citation.Finalize(resp.Content, finishSources(r.cfg.Backend, s.Gathered()))
	return graph.Writes(fAnswer.Set(res.Text), fCited.Set(res.Sources), fDropped.Set(res.Dropped),
		fMessages.Add(schemas.AssistantMessage(res.Text)))
}

// ErrSearchesFailed: every search of the turn that was tried failed, so
// nothing was found to answer from. A search that fails while others find
// something is only a warning (WarningSearchFailed).
var ErrSearchesFailed = errors.New("research: every search failed")

// withSearches fails the turn before node (the reflection) when no search
// of it found anything because searches failed: an answer would rest on
// nothing. Failed searches among successful ones are warnings only.
func (r *Researcher) withSearches(node graph.NodeFunc[State]) graph.NodeFunc[State] {
	return func(ctx context.Context, s State) (graph.Update[State], error) {
		if !s.gatheredAny() {
			var failed []string
			for _, f := range s.Findings {
				for _, w := range f.Warnings {
					if w.Kind == WarningSearchFailed {
						failed = append(failed, w.Items...)
					}
				}
			}
			if len(failed) > 0 {
				return graph.Update[State]{}, fmt.Errorf("%w (%s): %s; check the search provider (research config shows it) and resume the run",
					ErrSearchesFailed, r.cfg.Backend.Name(), strings.Join(failed, "; "))
			}
		}
		return node(ctx, s)
	}
}

func summaries(fs []Finding, sep string) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Summary
	}
	return strings.Join(parts, sep)
}

// newQueries cleans candidate queries: trimmed, non-empty, not already in
// seen nor repeated (compared case- and space-insensitively), at most n.
func newQueries(candidates, seen []string, n int) []string {
	known := map[string]bool{}
	for _, q := range seen {
		known[queryKey(q)] = true
	}
	var out []string
	for _, q := range candidates {
		q = strings.Join(strings.Fields(q), " ")
		k := queryKey(q)
		if k == "" || known[k] {
			continue
		}
		known[k] = true
		out = append(out, q)
		if len(out) == n {
			break
		}
	}
	return out
}

func queryKey(q string) string {
	return strings.ToLower(strings.Join(strings.FieldsFunc(q, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsPunct(r) && r != '-' && r != '+' && r != '#'
	}), " "))
}

func lastQuestion(msgs []schemas.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == schemas.User {
			return msgs[i].Content
		}
	}
	return ""
}

// RunOption tunes one run.
type RunOption func(*runOptions)

type runOptions struct {
	thread  string
	runID   string
	queries int
	loops   int
	review  *bool
	answer  *ReviewAnswer
	observe func(Activity)
	steps   func(StepState)
	journal CallJournal
}

// Thread continues (or starts) a conversation stored by the Checkpointer:
// a follow-up question sees the earlier ones and their answers. With a
// Checkpointer, every step of the run is stored under the thread, so that
// Resume can continue it after a crash, a failure or a review.
func Thread(id string) RunOption { return func(o *runOptions) { o.thread = id } }

// RunID labels the checkpoints the run writes, to tell the runs of a thread
// apart in its history.
func RunID(id string) RunOption { return func(o *runOptions) { o.runID = id } }

// InitialQueries overrides Config.InitialQueries for one run.
func InitialQueries(n int) RunOption { return func(o *runOptions) { o.queries = n } }

// MaxLoops overrides Config.MaxLoops for one run (at most 50).
func MaxLoops(n int) RunOption { return func(o *runOptions) { o.loops = n } }

// Review makes the run pause before each round of searches — after the
// queries are written, and after each reflection that asks for more — so
// that a person approves or edits the queries: Run returns the report so far
// with Report.Review set and an error matching graph.ErrInterrupted, and
// Resume with Answer continues. It needs a Checkpointer and a Thread.
func Review(on bool) RunOption { return func(o *runOptions) { o.review = &on } }

// Answer answers the review a paused run waits on (Resume).
func Answer(a ReviewAnswer) RunOption { return func(o *runOptions) { o.answer = &a } }

// Observe receives the run's activity as it happens: queries, searches,
// reflections, warnings, answer tokens. It is called from the goroutine
// running Run. The answer's streamed tokens come as the model writes them,
// one ActivityToken per piece of its stream, without delay: an observer
// that passes them on in batches (the server's event log) gathers them
// itself, only while its consumer is busy, so that no token waits for a
// clock.
func Observe(f func(Activity)) RunOption { return func(o *runOptions) { o.observe = f } }

// StepState is the run's state after a step: its number, the nodes that
// ran in it (in task order, each once) and the merged state.
type StepState struct {
	Step  int
	Nodes []string
	State State
}

// ObserveSteps receives the state after each step of the run — LangGraph's
// "values" stream — from the goroutine running Run.
func ObserveSteps(f func(StepState)) RunOption { return func(o *runOptions) { o.steps = f } }

func collectOptions(opts []RunOption) runOptions {
	var o runOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

func (o runOptions) graphOptions() []graph.RunOption {
	var opts []graph.RunOption
	if o.thread != "" {
		opts = append(opts, graph.Thread(o.thread))
	}
	if o.runID != "" {
		opts = append(opts, graph.RunID(o.runID))
	}
	if o.answer != nil {
		opts = append(opts, graph.Answer(*o.answer))
	}
	return opts
}

func (r *Researcher) input(question string, o runOptions) (State, error) {
	question = strings.TrimSpace(question)
	if question == "" {
		return State{}, errors.New("research: the question is empty")
	}
	if o.review != nil && *o.review && (o.thread == "" || r.cfg.Checkpointer == nil) {
		return State{}, errors.New("research: Review needs a Checkpointer (Config.Checkpointer) and a Thread, to pause and resume the run")
	}
	review := o.review
	if review == nil && o.thread != "" {
		off := false // a new turn reviews only when asked again
		review = &off
	}
	return State{Messages: []schemas.Message{schemas.UserMessage(question)}, InitialQueries: o.queries, MaxLoops: o.loops, Review: review}, nil
}

// Stream runs the graph for question and yields its events (see package
// graph); Describe turns them into timeline activities (one per event: a
// token each, as for Observe), and ReportFrom turns the
// State of the last event (graph.EventEnd) into the Report. Failed attempts
// write nothing to the state: what they spent comes as EventCustom events
// carrying a nodes.FailedUsage, to be added to the Report's Usage as Run
// does.
func (r *Researcher) Stream(ctx context.Context, question string, opts ...RunOption) iter.Seq2[graph.Event[State], error] {
	o := collectOptions(opts)
	in, err := r.input(question, o)
	if err != nil {
		return func(yield func(graph.Event[State], error) bool) { yield(graph.Event[State]{}, err) }
	}
	return r.graph.Stream(withJournal(ctx, o.journal), in, o.graphOptions()...)
}

// Run researches question and returns the report. If the run fails or is
// cancelled part-way, it returns the error together with a report built from
// what was gathered, marked Incomplete. If it pauses for a review, the error
// matches graph.ErrInterrupted and Report.Review says what waits.
func (r *Researcher) Run(ctx context.Context, question string, opts ...RunOption) (*Report, error) {
	o := collectOptions(opts)
	in, err := r.input(question, o)
	if err != nil {
		return nil, err
	}
	return r.report(question, in, o, r.graph.Stream(withJournal(ctx, o.journal), in, o.graphOptions()...))
}

// Resume continues a stored run of thread — after a crash, a failure, a
// timeout or Ctrl-C, or with the Answer to the review it waits on. Work that
// finished before is not done again: no model call or search is repeated.
func (r *Researcher) Resume(ctx context.Context, thread string, opts ...RunOption) (*Report, error) {
	if r.cfg.Checkpointer == nil {
		return nil, errors.New("research: Resume needs a Checkpointer (Config.Checkpointer)")
	}
	o := collectOptions(opts)
	o.thread = thread
	snap, err := r.graph.State(ctx, graph.Thread(thread))
	if err != nil {
		return nil, fmt.Errorf("research: resuming thread %q: %w", thread, err)
	}
	return r.report(lastQuestion(snap.State.Messages), snap.State, o, r.graph.ResumeStream(withJournal(ctx, o.journal), o.graphOptions()...))
}

// Saved returns the report of a stored thread as of its newest checkpoint:
// the final report of a finished run, or, for one that stopped — or waits
// for a review — what it had gathered, marked Incomplete.
func (r *Researcher) Saved(ctx context.Context, thread string) (*Report, error) {
	if r.cfg.Checkpointer == nil {
		return nil, errors.New("research: Saved needs a Checkpointer (Config.Checkpointer)")
	}
	snap, err := r.graph.State(ctx, graph.Thread(thread))
	if err != nil {
		return nil, fmt.Errorf("research: reading thread %q: %w", thread, err)
	}
	// The newest snapshot's state has the writes of the searches that
	// finished in the step the run stopped in — their findings and what they
	// spent — applied already (graph.Compiled.State).
	st := snap.State
	rep := r.newReport(lastQuestion(st.Messages), st, !snap.Done())
	rep.Review = pendingReview(snap.Interrupts)
	return rep, nil
}

// report drives a run's events to its report.
func (r *Researcher) report(question string, last State, o runOptions, events iter.Seq2[graph.Event[State], error]) (*Report, error) {
	start := time.Now()
	timer := newTimer(start)
	// Findings of web research tasks that finished in a step that has not
	// completed yet: if the run stops mid-step, the incomplete report still
	// has them.
	var unmerged []Finding
	var ran []string // the nodes of the current step
	started := false // past the stream's first EventStep: the state the run starts from, not a step
	var runErr error
	var review *ReviewRequest
	// The observer gets the back end's warnings (a corpus's skipped files)
	// first.
	observe := func(Activity) {}
	if o.observe != nil {
		observe = o.observe
		if w, ok := r.cfg.Backend.(Warner); ok {
			for _, w := range w.Warnings() {
				observe(Activity{Kind: ActivityWarning, Warning: &w})
			}
		}
	}
	// What failed attempts spent (nodes.FailedUsage): they write no
	// update, so it is added to the state's usage for the report.
	var failed llm.UsageByRole
	for ev, err := range events {
		if err != nil {
			runErr = err
			break
		}
		timer.observe(ev)
		switch ev.Kind {
		case graph.EventCustom:
			if fu, ok := ev.Value.(nodes.FailedUsage); ok {
				failed = failed.Merge(fu.Usage)
			}
		case graph.EventStep, graph.EventEnd:
			last, unmerged = ev.State, nil
			if ev.Kind == graph.EventStep && o.steps != nil && started {
				o.steps(StepState{Step: ev.Step, Nodes: ran, State: ev.State})
			}
			started, ran = true, nil
		case graph.EventTaskStart:
			if !slices.Contains(ran, ev.Node) {
				ran = append(ran, ev.Node)
			}
		case graph.EventTaskEnd:
			if fs, ok := fFindings.Written(ev.Update); ok && ev.Err == nil && ev.Node == NodeWebResearch {
				unmerged = append(unmerged, fs...)
			}
		case graph.EventInterrupt:
			last = ev.State
			review = pendingReview(ev.Interrupts)
			runErr = &graph.InterruptError{Thread: o.thread, Interrupts: ev.Interrupts}
		}
		if o.observe != nil {
			if a, ok := Describe(ev); ok {
				observe(a)
			}
		}
	}
	if runErr != nil && len(unmerged) > 0 {
		last.Findings = append(last.Findings[:len(last.Findings):len(last.Findings)], unmerged...)
	}
	rep := r.newReport(question, last, runErr != nil)
	if failed != nil {
		rep.Usage = rep.Usage.Merge(failed)
	}
	rep.Review = review
	rep.Timings = timer.timings(time.Now())
	if rep.SnippetsOnly() {
		w := rep.Warnings[len(rep.Warnings)-1]
		observe(Activity{Kind: ActivityWarning, Warning: &w})
	}
	return rep, runErr
}

// pendingReview is the review among interrupts, if any.
func pendingReview(intr []graph.PendingInterrupt) *ReviewRequest {
	for _, pi := range intr {
		if pi.Node != NodeReviewQueries {
			continue
		}
		if req, err := graph.PayloadOf[ReviewRequest](pi); err == nil {
			return &req
		}
	}
	return nil
}
