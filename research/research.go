package research

import (
	"context"
	"errors"
	"fmt"
	"iter"
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
	// all of a round).
	MaxConcurrency int
	// Checkpointer stores runs so that Thread can continue a conversation.
	Checkpointer graph.Checkpointer
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
	for _, m := range []*llm.Model{&cfg.ResearchModel, &cfg.ReflectionModel, &cfg.AnswerModel} {
		if *m == nil {
			*m = cfg.QueryModel
		}
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
	g.AddNode(NodeGenerateQuery, nodes.Structured[State, schemas.SearchQueryList]{
		Model:   r.cfg.QueryModel,
		Role:    llm.RoleQuery,
		Prompt:  r.queryPrompt,
		Write:   r.startTurn,
		Options: []llm.Option{llm.Temperature(1)},
		Usage:   fUsage,
	}.Node())
	graph.AddTask(g, NodeWebResearch, r.webResearch)
	g.AddNode(NodeReflection, nodes.Structured[State, schemas.Reflection]{
		Model:   r.cfg.ReflectionModel,
		Role:    llm.RoleReflection,
		Prompt:  r.reflectionPrompt,
		Write:   r.reflect,
		Options: []llm.Option{llm.Temperature(1)},
		Usage:   fUsage,
	}.Node())
	g.AddNode(NodeFinalizeAnswer, nodes.Generate[State]{
		Model:   r.cfg.AnswerModel,
		Role:    llm.RoleAnswer,
		Prompt:  r.answerPrompt,
		Write:   finalize,
		Options: []llm.Option{llm.Temperature(0)},
		Usage:   fUsage,
	}.Node())

	g.AddEdge(graph.Start, NodeGenerateQuery)
	graph.AddFanOut(g, NodeGenerateQuery, NodeWebResearch, r.initialTasks)
	g.AddEdge(NodeWebResearch, NodeReflection)
	g.AddConditional(NodeReflection, r.evaluateResearch, NodeWebResearch, NodeFinalizeAnswer)
	g.AddEdge(NodeFinalizeAnswer, graph.End)

	opts := []graph.Option{graph.WithMaxConcurrency(r.cfg.MaxConcurrency), graph.WithRecursionLimit(2*r.maxLoopsCap() + 4)}
	if r.cfg.Checkpointer != nil {
		opts = append(opts, graph.WithCheckpointer(r.cfg.Checkpointer))
	}
	return g.Compile(opts...)
}

// maxLoopsCap bounds the loops any run may ask for, for the recursion limit.
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
// reset (a follow-up question on a thread starts a fresh round) and the
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
		fReflection.Set(schemas.Reflection{}), fAnswer.Set(""), fCited.Set(nil), fDropped.Set(0),
	)
}

func (r *Researcher) initialTasks(s State) []Task {
	topic := Topic(s.Messages)
	tasks := make([]Task, len(s.Queries))
	for i, q := range s.Queries {
		tasks[i] = Task{Query: q, ID: i, Topic: topic}
	}
	return tasks
}

func (r *Researcher) webResearch(ctx context.Context, t Task) (graph.Update[State], error) {
	meter := new(llm.Meter)
	model := llm.Metered(r.cfg.ResearchModel, meter, llm.RoleResearch)
	f, err := r.cfg.Backend.Research(ctx, model, Query{Text: t.Query, ID: t.ID, Topic: t.Topic, Date: r.today()})
	if err != nil {
		return graph.Update[State]{}, fmt.Errorf("researching %q with %s: %w", t.Query, r.cfg.Backend.Name(), err)
	}
	f.Query, f.ID = t.Query, t.ID
	return graph.Writes(fFindings.Add(f), fUsage.Merge(meter.Snapshot())), nil
}

func (r *Researcher) reflectionPrompt(s State) []schemas.Message {
	return []schemas.Message{schemas.UserMessage(fmt.Sprintf(reflectionPrompt,
		Topic(s.Messages), r.today(), bulletList(s.Queries), summaries(s.Findings, "\n\n---\n\n")))}
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
// follow-ups, or to the answer. "Not sufficient" without any new follow-up
// query finalises: a run never ends without an answer.
func (r *Researcher) evaluateResearch(s State) graph.Route {
	if len(s.Pending) == 0 {
		return graph.Goto(NodeFinalizeAnswer)
	}
	topic := Topic(s.Messages)
	first := len(s.Queries) - len(s.Pending)
	sends := make([]graph.Send, len(s.Pending))
	for i, q := range s.Pending {
		sends[i] = graph.Send{Node: NodeWebResearch, Arg: Task{Query: q, ID: first + i, Topic: topic}}
	}
	return graph.Sends(sends...)
}

func (r *Researcher) answerPrompt(s State) []schemas.Message {
	return []schemas.Message{schemas.UserMessage(fmt.Sprintf(answerPrompt, r.today(), Topic(s.Messages), summaries(s.Findings, "\n---\n\n")))}
}

// finalize keeps only the citations that point to sources gathered in this
// turn and numbers them.
func finalize(s State, resp *llm.Response) graph.Update[State] {
	res := citation.Finalize(resp.Content, s.Gathered())
	return graph.Writes(fAnswer.Set(res.Text), fCited.Set(res.Sources), fDropped.Set(res.Dropped),
		fMessages.Add(schemas.AssistantMessage(res.Text)))
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
	queries int
	loops   int
	observe func(Activity)
}

// Thread continues (or starts) a conversation stored by the Checkpointer:
// a follow-up question sees the earlier ones and their answers.
func Thread(id string) RunOption { return func(o *runOptions) { o.thread = id } }

// InitialQueries overrides Config.InitialQueries for one run.
func InitialQueries(n int) RunOption { return func(o *runOptions) { o.queries = n } }

// MaxLoops overrides Config.MaxLoops for one run (at most 50).
func MaxLoops(n int) RunOption { return func(o *runOptions) { o.loops = n } }

// Observe receives the run's activity as it happens: queries, searches,
// reflections, answer tokens. It is called from the goroutine running Run.
func Observe(f func(Activity)) RunOption { return func(o *runOptions) { o.observe = f } }

func (r *Researcher) input(question string, o runOptions) (State, []graph.RunOption, error) {
	question = strings.TrimSpace(question)
	if question == "" {
		return State{}, nil, errors.New("research: the question is empty")
	}
	in := State{Messages: []schemas.Message{schemas.UserMessage(question)}, InitialQueries: o.queries, MaxLoops: o.loops}
	var opts []graph.RunOption
	if o.thread != "" {
		opts = append(opts, graph.Thread(o.thread))
	}
	return in, opts, nil
}

// Stream runs the graph for question and yields its events (see package
// graph); Describe turns them into timeline activities.
func (r *Researcher) Stream(ctx context.Context, question string, opts ...RunOption) iter.Seq2[graph.Event[State], error] {
	var o runOptions
	for _, opt := range opts {
		opt(&o)
	}
	in, gopts, err := r.input(question, o)
	if err != nil {
		return func(yield func(graph.Event[State], error) bool) { yield(graph.Event[State]{}, err) }
	}
	return r.graph.Stream(ctx, in, gopts...)
}

// Run researches question and returns the report. If the run fails or is
// cancelled part-way, it returns the error together with a report built from
// what was gathered, marked Incomplete.
func (r *Researcher) Run(ctx context.Context, question string, opts ...RunOption) (*Report, error) {
	var o runOptions
	for _, opt := range opts {
		opt(&o)
	}
	in, gopts, err := r.input(question, o)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	timer := newTimer(start)
	last := in
	// Findings of web research tasks that finished in a step that has not
	// completed yet: if the run stops mid-step, the incomplete report still
	// has them.
	var unmerged []Finding
	var runErr error
	for ev, err := range r.graph.Stream(ctx, in, gopts...) {
		if err != nil {
			runErr = err
			break
		}
		timer.observe(ev)
		switch ev.Kind {
		case graph.EventStep, graph.EventEnd:
			last, unmerged = ev.State, nil
		case graph.EventTaskEnd:
			if fs, ok := fFindings.Written(ev.Update); ok && ev.Err == nil && ev.Node == NodeWebResearch {
				unmerged = append(unmerged, fs...)
			}
		}
		if o.observe != nil {
			if a, ok := Describe(ev); ok {
				o.observe(a)
			}
		}
	}
	if runErr != nil && len(unmerged) > 0 {
		last.Findings = append(last.Findings[:len(last.Findings):len(last.Findings)], unmerged...)
	}
	rep := newReport(question, r.cfg.Backend.Name(), last, runErr != nil)
	rep.Timings = timer.timings(time.Now())
	return rep, runErr
}
