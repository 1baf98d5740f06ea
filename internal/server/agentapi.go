package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/deepgraph/deepgraph/agentserver"
	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/research/citation"
	"github.com/deepgraph/deepgraph/schemas"
	"github.com/deepgraph/deepgraph/telemetry"
)

// The Agent Server API of research serve (package agentserver): the
// deep-search graph as the assistant "research", in LangGraph's terms —
//
//   - its input is {messages: [{type: "human", content: question}]} (the last
//     human message is the question) and, optionally, review: true; a run's
//     config.configurable (or context) may choose effort, backend, models
//     (role → spec) and review, among what GET /info offers; a run that
//     says nothing of review gets the server's default (serve.review),
//     so that clients sending no configuration, such as Agent Chat UI,
//     can be served reviewed runs;
//   - its values are the conversation as LangChain messages — the final
//     answer is the last ai message, Markdown with its checked citations —
//     with the turn's queries, loops, cited sources, dropped citations and
//     usage;
//   - its timeline is custom events {type: "activity", activity} and
//     {type: "cost", tokens, calls, cost_usd}, and the answer streams as
//     messages-tuple chunks with the id of the ai message it becomes;
//   - a review is an interrupt whose value is LangChain's HITLRequest (one
//     action request, search_queries, with the queries as args; approve,
//     edit or reject), which Agent Chat UI renders; its resume is the UI's
//     {decisions: [{type: approve|edit|reject, edited_action}]} — reject
//     stops searching and answers from what was found — or the CLI's answer
//     text ("ok", "stop", queries separated by ";").

// The graph ids research serve serves.
const graphResearch = "research"

// researchAPI builds the assistants of the server's graphs.
type researchAPI struct {
	apiBase
	// report builds the report of a state (its Markdown is a value).
	report func(research.State) *research.Report
}

// apiBase is what the served graphs' APIs share.
type apiBase struct {
	eng         Engine
	cp          graph.Checkpointer
	maxQuestion int
	redact      func(string) string
	// metadata is the assistants' metadata: what a run may choose.
	metadata agentserver.Metadata
	// records keeps the runs' records and spending in the run store.
	records *runStoreRecords
	// tel traces and meters the runs (nil: not).
	tel *telemetry.Telemetry
}

// setupFailed ends a run whose graph could not be set up (what) with err,
// redacted.
func (b apiBase) setupFailed(end runEnd, what string, err error) error {
	err = fmt.Errorf("setting up the %s: %s", what, b.redact(err.Error()))
	end("error", err, nil, nil, nil)
	return err
}

// taskInput reads the input of a graph whose thread takes one task (the
// agent, the flow): the task as the last human message, on a thread that
// has no state yet.
func taskInput[S any](b apiBase, shape *graph.Compiled[S], kind string, cfg agentserver.RunConfig, raw json.RawMessage) (string, error) {
	var in struct {
		Messages []agentserver.Message `json:"messages"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return "", fmt.Errorf("the input is {messages: [{type: \"human\", content: task}]}: %w", err)
	}
	task, err := lastHuman(in.Messages, "task", b.maxQuestion)
	if err != nil {
		return "", err
	}
	_, err = shape.State(context.Background(), graph.Thread(cfg.ThreadID))
	switch {
	case err == nil:
		return "", fmt.Errorf("%s thread takes one task: create a new thread for this one", kind)
	case !errors.Is(err, graph.ErrCheckpointNotFound):
		return "", err
	}
	return task, nil
}

// serveGraph serves shape as the assistant of graphID and returns what
// releases what its setup holds (closeShape, which may be nil), or, when
// it cannot be served, releases it and says why.
func serveGraph[S any](api *agentserver.Server, graphID string, shape *graph.Compiled[S], closeShape func(), opts ...agentserver.Option[S]) (func(), error) {
	if closeShape == nil {
		closeShape = func() {}
	}
	if err := api.Serve(graphID, agentserver.Compiled(shape, opts...)); err != nil {
		closeShape()
		return nil, err
	}
	return closeShape, nil
}

// customEvent is the data of a custom event: deepgraph's timeline.
type customEvent struct {
	Type     string    `json:"type"`
	Activity *Activity `json:"activity,omitempty"`
	Tokens   int       `json:"tokens,omitempty"`
	Calls    int       `json:"calls,omitempty"`
	// CostUSD is null when a model of the run has no known price.
	CostUSD *float64 `json:"cost_usd,omitempty"`
}

// researchValues are a research thread's values as clients see them.
type researchValues struct {
	Messages []agentserver.Message `json:"messages"`
	Queries  []string              `json:"queries"`
	Loops    int                   `json:"research_loop_count"`
	Findings int                   `json:"findings"`
	Gathered int                   `json:"gathered"`
	Answer   string                `json:"answer"`
	Sources  []citation.Source     `json:"sources"`
	Dropped  int                   `json:"dropped_citations"`
	Usage    llm.UsageByRole       `json:"usage,omitempty"`
	Review   *bool                 `json:"review,omitempty"`
	// Markdown is the report once the turn has its answer: the answer and
	// its numbered Sources list, as research prints it.
	Markdown string `json:"markdown,omitempty"`
}

func (a *researchAPI) valuesOf(s research.State) any {
	v := researchValuesOf(s)
	if s.Answer != "" && a.report != nil {
		v.Markdown = a.report(s).Markdown()
	}
	return v
}

func researchValuesOf(s research.State) researchValues {
	v := researchValues{Messages: langchainMessages(s.Messages), Queries: s.Queries, Loops: s.Loops, Findings: len(s.Findings),
		Gathered: len(s.Gathered()), Answer: s.Answer, Sources: s.Cited, Dropped: s.Dropped, Usage: s.Usage, Review: s.Review}
	if v.Queries == nil {
		v.Queries = []string{}
	}
	if v.Sources == nil {
		v.Sources = []citation.Source{}
	}
	return v
}

// messageID is the id of a thread's i-th message: messages are only ever
// appended, so the index names one message of a line of checkpoints, and
// the streamed answer knows its id before it is written.
func messageID(i int) string { return fmt.Sprintf("msg-%d", i) }

// langchainMessages are a conversation as LangChain's message dicts.
func langchainMessages(msgs []schemas.Message) []agentserver.Message {
	out := make([]agentserver.Message, 0, len(msgs))
	for i, m := range msgs {
		lm := agentserver.Message{ID: messageID(i), Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
		switch m.Role {
		case schemas.User:
			lm.Type = agentserver.MessageHuman
		case schemas.Assistant:
			lm.Type = agentserver.MessageAI
		case schemas.Tool:
			lm.Type = agentserver.MessageTool
		default:
			lm.Type = agentserver.MessageSystem
		}
		for _, c := range m.ToolCalls {
			args := c.Arguments
			if !json.Valid(args) {
				args, _ = json.Marshal(map[string]string{"raw": string(c.Arguments)})
			}
			lm.ToolCalls = append(lm.ToolCalls, agentserver.ToolCall{Name: c.Name, Args: args, ID: c.ID})
		}
		out = append(out, lm)
	}
	return out
}

// configString reads a string of a run's configuration.
func configString(cfg agentserver.RunConfig, key string) (string, error) {
	raw, ok := cfg.Configurable[key]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: configurable.%s is a string", agentserver.ErrBadConfig, key)
	}
	return s, nil
}

// runRequest is what a run's configuration asks, as the engine reads it;
// review is what a run that does not say asks (Choices.DefaultReview).
func runRequest(cfg agentserver.RunConfig, review bool) (RunRequest, error) {
	req := RunRequest{Kind: runstore.KindResearch, Review: review}
	var err error
	if req.Effort, err = configString(cfg, "effort"); err != nil {
		return req, err
	}
	if req.Backend, err = configString(cfg, "backend"); err != nil {
		return req, err
	}
	if raw, ok := cfg.Configurable["models"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &req.Models); err != nil {
			return req, fmt.Errorf("%w: configurable.models is an object of role to model spec", agentserver.ErrBadConfig)
		}
	}
	if raw, ok := cfg.Configurable["review"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &req.Review); err != nil {
			return req, fmt.Errorf("%w: configurable.review is true or false", agentserver.ErrBadConfig)
		}
	}
	return req, nil
}

func (a *researchAPI) settings(cfg agentserver.RunConfig) (app.Settings, error) {
	req, err := runRequest(cfg, a.eng.Choices().DefaultReview)
	if err != nil {
		return app.Settings{}, err
	}
	set, err := a.eng.Settings(req)
	if errors.Is(err, ErrBadRequest) {
		err = fmt.Errorf("%w: %s", agentserver.ErrBadConfig, strings.TrimPrefix(err.Error(), ErrBadRequest.Error()+": "))
	}
	return set, err
}

// lastHuman is the last human message of a run's input, checked: there is
// one, it is UTF-8 and at most max characters long. what names it in the
// errors ("question", "task").
func lastHuman(msgs []agentserver.Message, what string, max int) (string, error) {
	text := ""
	for _, m := range msgs {
		if m.Type == agentserver.MessageHuman {
			text = strings.TrimSpace(m.Content)
		}
	}
	switch n := utf8.RuneCountInString(text); {
	case text == "":
		return "", fmt.Errorf("the input has no %s: send {messages: [{type: \"human\", content: %s}]}", what, what)
	case !utf8.ValidString(text):
		return "", fmt.Errorf("the %s is not valid UTF-8", what)
	case n > max:
		return "", fmt.Errorf("the %s has %d characters; this server takes at most %d", what, n, max)
	}
	return text, nil
}

// input reads a research run's input: the last human message is the
// question; review, in the input or the configuration, pauses for the
// queries.
func (a *researchAPI) input(cfg agentserver.RunConfig, raw json.RawMessage) (research.State, []graph.Write[research.State], error) {
	var in struct {
		Messages []agentserver.Message `json:"messages"`
		Review   *bool                 `json:"review"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return research.State{}, nil, fmt.Errorf("the input is {messages: [{type: \"human\", content: question}]}: %w", err)
	}
	question, err := lastHuman(in.Messages, "question", a.maxQuestion)
	if err != nil {
		return research.State{}, nil, err
	}
	set, err := a.settings(cfg)
	if err != nil {
		return research.State{}, nil, err
	}
	review := set.Review || (in.Review != nil && *in.Review)
	return research.State{Messages: []schemas.Message{schemas.UserMessage(question)}, InitialQueries: set.Queries, MaxLoops: set.Loops,
		Review: &review}, nil, nil
}

// build sets up a research run: a researcher with the run's settings, and
// the observer that makes its timeline and streams its answer.
func (a *researchAPI) build(ctx context.Context, cfg agentserver.RunConfig) (agentserver.RunSetup[research.State], error) {
	set, err := a.settings(cfg)
	if err != nil {
		return agentserver.RunSetup[research.State]{}, err
	}
	ctx, end := traceAPIRun(ctx, a.tel, telemetry.RunKindResearch, cfg)
	r, err := a.eng.Research(ctx, set, a.cp)
	if err != nil {
		return agentserver.RunSetup[research.State]{}, a.setupFailed(end, "run", err)
	}
	tl := &researchTimeline{start: time.Now(), models: r.Models, prices: r.Prices, progress: a.records.progress(cfg.RunID)}
	// The searches and page reads it pays for are recorded: a run that
	// continues this one's unfinished tasks does not pay for them again.
	ctx = research.ContextWithJournal(ctx, a.records.journal(ctx, cfg))
	return agentserver.RunSetup[research.State]{Graph: r.Researcher.Graph(), Observe: tl.observe, Close: r.Close, Context: ctx,
		End: func(status string, err error) {
			tl.progress.flush()
			tl.mu.Lock()
			usage := tl.usage
			tl.mu.Unlock()
			end(status, err, usage, r.Models, r.Prices)
		}}, nil
}

// researchTimeline turns a run's engine events into its timeline.
type researchTimeline struct {
	start    time.Time
	models   map[string]string
	prices   llm.Prices
	progress *spendingWriter

	mu       sync.Mutex
	messages int // the messages of the state so far: the answer's index
	usage    llm.UsageByRole
}

func (t *researchTimeline) observe(ev graph.Event[research.State], out agentserver.Emitter) {
	if sp, ok := t.show(ev, out); ok {
		t.progress.record(sp) // not under mu: it writes to the run store
	}
}

// show adds what ev shows to the timeline, and says what the run has spent
// when ev changed it.
func (t *researchTimeline) show(ev graph.Event[research.State], out agentserver.Emitter) (spending, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev.Kind {
	case graph.EventStep, graph.EventInterrupt, graph.EventEnd:
		t.messages = len(ev.State.Messages)
	}
	a, ok := research.Describe(ev)
	if !ok {
		return spending{}, false
	}
	if a.Kind == research.ActivityToken {
		out.Message(ev.Node, agentserver.MessageChunk{ID: messageID(t.messages), Content: a.Token, Restart: a.Restart})
		return spending{}, false
	}
	t.usage = t.usage.Merge(a.Usage)
	act := researchActivity(a)
	act.ElapsedMS = time.Since(t.start).Milliseconds()
	act.Tokens = app.Tokens(t.usage.Total().Usage)
	out.Custom(customEvent{Type: "activity", Activity: &act})
	if a.Usage == nil {
		return spending{}, false
	}
	return spent(out, t.usage, t.models, t.prices), true
}

// spending is what a run has spent so far.
type spending struct {
	tokens, calls int
	cost          *float64 // US dollars; nil when unknown
}

// spent tells the timeline what a run has spent so far, usage at prices —
// a custom event {type: "cost", tokens, calls, cost_usd} — and returns it,
// for the run's record.
func spent(out agentserver.Emitter, usage llm.UsageByRole, models map[string]string, prices llm.Prices) spending {
	tot := usage.Total()
	tokens, cost := app.Tokens(tot.Usage), app.CostUSD(usage, models, prices)
	out.Custom(customEvent{Type: "cost", Tokens: tokens, Calls: tot.Calls, CostUSD: cost})
	return spending{tokens: tokens, calls: tot.Calls, cost: cost}
}

// hitlRequest is LangChain's HITLRequest, the interrupt value Agent Chat
// UI renders with approve, edit and reject; Review is deepgraph's own
// request, for clients that know it.
type hitlRequest struct {
	ActionRequests []actionRequest         `json:"action_requests"`
	ReviewConfigs  []reviewConfig          `json:"review_configs"`
	Review         *research.ReviewRequest `json:"review,omitempty"`
}

type actionRequest struct {
	Name        string          `json:"name"`
	Args        json.RawMessage `json:"args"`
	Description string          `json:"description,omitempty"`
}

type reviewConfig struct {
	ActionName       string   `json:"action_name"`
	AllowedDecisions []string `json:"allowed_decisions"`
}

// actionSearch is the action a review approves: the queries to search.
const actionSearch = "search_queries"

func showReview(pi graph.PendingInterrupt) any {
	req, err := graph.PayloadOf[research.ReviewRequest](pi)
	if err != nil {
		return pi.Payload
	}
	args, _ := json.Marshal(map[string][]string{"queries": req.Queries})
	desc := fmt.Sprintf("Search these queries for %q?", req.Question)
	if req.KnowledgeGap != "" {
		desc = fmt.Sprintf("Follow-up queries (loop %d) for %q; missing: %s", req.Loop, req.Question, req.KnowledgeGap)
	}
	return hitlRequest{ActionRequests: []actionRequest{{Name: actionSearch, Args: args, Description: desc}},
		ReviewConfigs: []reviewConfig{{ActionName: actionSearch, AllowedDecisions: []string{"approve", "edit", "reject"}}}, Review: &req}
}

// answerReview reads the resume of a review: Agent Chat UI's decisions, or
// the CLI's answer (text, or {queries, stop}).
func answerReview(_ graph.PendingInterrupt, raw json.RawMessage) (any, error) {
	var hitl struct {
		Decisions []struct {
			Type         string `json:"type"`
			EditedAction *struct {
				Args struct {
					Queries json.RawMessage `json:"queries"`
				} `json:"args"`
			} `json:"edited_action"`
		} `json:"decisions"`
	}
	if json.Unmarshal(raw, &hitl) == nil && len(hitl.Decisions) > 0 {
		d := hitl.Decisions[0]
		switch d.Type {
		case "approve":
			return research.ReviewAnswer{}, nil
		case "reject":
			return research.ReviewAnswer{Stop: true}, nil
		case "edit":
			var queries []string
			if d.EditedAction != nil {
				var err error
				if queries, err = editedList(d.EditedAction.Args.Queries); err != nil {
					return nil, fmt.Errorf("edited_action.args.queries: %w", err)
				}
			}
			if len(queries) == 0 {
				return nil, errors.New("an edit decision needs edited_action.args.queries: the queries to search")
			}
			return research.ReviewAnswer{Queries: queries}, nil
		}
		return nil, fmt.Errorf("decision %q: use approve, edit or reject", d.Type)
	}
	return reviewAnswer(raw)
}

// editedList reads a list an Agent Chat UI edit sends: its edit form holds
// each argument as text, so a list it was shown as a JSON array comes back
// as a string — the array's JSON as it was, or as the user rewrote it (a
// JSON array, or items separated by ";" or new lines). A JSON array of
// strings, as other clients send it, is read as it is. Empty items are
// dropped.
func editedList(raw json.RawMessage) ([]string, error) {
	var items []string
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if json.Unmarshal(raw, &items) != nil {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, errors.New("send a list of strings, or text with one item per line or items separated by \";\"")
		}
		text = strings.TrimSpace(text)
		if strings.HasPrefix(text, "[") {
			if err := json.Unmarshal([]byte(text), &items); err != nil {
				return nil, fmt.Errorf("the text starts like a JSON array but is not a list of strings (%v): write one item per line instead", err)
			}
		} else {
			items = strings.FieldsFunc(text, func(r rune) bool { return r == ';' || r == '\n' })
		}
	}
	out := items[:0]
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out, nil
}

// serveGraphs adds the server's graphs to api.
func (a *researchAPI) serveGraphs(ctx context.Context, api *agentserver.Server) (func(), error) {
	set, err := a.eng.Settings(RunRequest{Kind: runstore.KindResearch})
	if err != nil {
		return nil, err
	}
	// The graph that reads and edits the threads: a researcher with the
	// default settings (runs build their own).
	shape, err := a.eng.Research(ctx, set, a.cp)
	if err != nil {
		return nil, fmt.Errorf("setting up the research graph: %s", a.redact(err.Error()))
	}
	a.report = shape.Researcher.ReportFrom
	return serveGraph(api, graphResearch, shape.Researcher.Graph(), shape.Close,
		agentserver.Description[research.State]("Deep research: search the web in rounds, reflect, and answer with checked citations"),
		agentserver.AssistantMetadata[research.State](a.metadata),
		agentserver.Values(a.valuesOf),
		agentserver.Input(a.input),
		agentserver.Interrupts[research.State](showReview, answerReview),
		agentserver.Build(a.build))
}
