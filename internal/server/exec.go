package server

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/internal/app"
	"github.com/deepgraph/deepgraph/internal/runstore"
	"github.com/deepgraph/deepgraph/llm"
	"github.com/deepgraph/deepgraph/nodes"
	"github.com/deepgraph/deepgraph/research"
	"github.com/deepgraph/deepgraph/telemetry"
)

// execute runs a job to its end, its pause or its cancellation, recording
// each in the store and in its event log.
func (q *queue) execute(ctx context.Context, j *job) {
	run := j.run
	tr, err := q.st.Continue(ctx, run, q.logger)
	if err != nil {
		q.fail(ctx, j, nil, "the run could not start: "+err.Error())
		return
	}
	j.log.emit(EventStatus, statusData{Status: runstore.StatusRunning})
	set, err := app.SettingsOf(run)
	if err != nil {
		q.fail(ctx, j, tr, err.Error())
		return
	}
	started, err := q.started(ctx, run)
	if err != nil {
		q.fail(ctx, j, tr, "reading the run's checkpoints: "+err.Error())
		return
	}
	switch run.Kind {
	case runstore.KindAgent:
		q.agent(ctx, j, tr, set, started)
	default:
		q.research(ctx, j, tr, set, started)
	}
}

// started reports whether the run has stored a step: then it resumes from
// there, else it starts (a run queued and never begun, or one that died
// before its first step).
func (q *queue) started(ctx context.Context, run *runstore.Run) (bool, error) {
	cp, err := q.st.Checkpointer.Get(ctx, graph.Thread(run.Thread))
	if errors.Is(err, graph.ErrCheckpointNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return cp.Run == run.ID, nil
}

// fail ends a run that could not run (setup, store): failed, with an error
// event.
func (q *queue) fail(ctx context.Context, j *job, tr *app.Tracker, why string) {
	why = q.redact(why)
	q.release(j)
	if tr == nil {
		tr = &app.Tracker{Run: j.run}
	}
	j.log.emit(EventError, errorDetail{Code: codeRunFailed, Message: why})
	if tr.Run != nil {
		now := time.Now().UTC()
		tr.Run.Status, tr.Run.Error, tr.Run.Updated, tr.Run.Ended = runstore.StatusFailed, why, now, now
		if err := q.st.Runs.Update(context.WithoutCancel(ctx), tr.Run); err != nil {
			q.logger.Warn("could not record a failed run", "run", tr.Run.ID, "err", err)
		}
	}
	j.log.emit(EventStatus, statusData{Status: runstore.StatusFailed, Error: why})
	j.log.emit(EventEnd, endData{Status: runstore.StatusFailed})
}

// outcome is how a run's stretch ended.
func outcome(ctx context.Context, runErr error) (runstore.Status, string) {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errStopping):
		return runstore.StatusInterrupted, stoppedByServer
	case errors.Is(cause, errCancelled):
		return runstore.StatusInterrupted, "cancelled"
	case errors.Is(runErr, graph.ErrInterrupted):
		return runstore.StatusNeedsInput, "waits for an answer"
	case runErr != nil:
		return runstore.StatusFailed, runErr.Error()
	}
	return runstore.StatusDone, ""
}

// finish records the end of a stretch and closes it with its events:
// the interrupt or the report, an error, the status, the end.
func (q *queue) finish(ctx context.Context, j *job, tr *app.Tracker, status runstore.Status, why string, doc []byte, intr *Interrupt) {
	why = q.redact(why)
	endRun(ctx, status, why)
	// The interrupt or report is stored before the status, so that a
	// client that reads the run as waiting or done finds them.
	switch {
	case intr != nil:
		j.log.emit(EventInterrupt, intr)
	case doc != nil:
		j.log.emit(EventReport, json.RawMessage(doc))
	}
	if status == runstore.StatusFailed {
		j.log.emit(EventError, errorDetail{Code: codeRunFailed, Message: why})
	}
	q.release(j)
	if err := tr.Finish(ctx, status, why, doc); err != nil {
		q.logger.Warn("could not record the end of a run", "run", tr.Run.ID, "err", err)
	}
	j.log.emit(EventStatus, statusData{Status: status, Error: why})
	j.log.emit(EventEnd, endData{Status: status})
}

// saveSettings records settings learned while building the run (its back
// end's name, an agent's workspace), for a resume and for the report of a
// run that stops before writing one.
func (q *queue) saveSettings(ctx context.Context, tr *app.Tracker, set app.Settings) {
	data, err := json.Marshal(set)
	if err != nil {
		return
	}
	tr.Run.Settings = data
	tr.Progress(ctx, tr.Run.Tokens, tr.Run.Calls)
}

// timeline turns a run's progress into activity events with the elapsed
// time and the tokens so far.
type timeline struct {
	log   *runLog
	start time.Time
	base  int // tokens before this stretch
	usage llm.UsageByRole
}

func (t *timeline) tokens() int { return t.base + app.Tokens(t.usage.Total().Usage) }

func (t *timeline) activity(a Activity) {
	a.ElapsedMS = time.Since(t.start).Milliseconds()
	a.Tokens = t.tokens()
	t.log.emit(EventActivity, a)
}

func (q *queue) research(ctx context.Context, j *job, tr *app.Tracker, set app.Settings, started bool) {
	run := tr.Run
	r, err := q.eng.Research(ctx, set, q.st.Checkpointer)
	if err != nil {
		q.fail(ctx, j, tr, "setting up the run: "+err.Error())
		return
	}
	if r.Close != nil {
		defer r.Close()
	}
	if set.Backend != r.Backend {
		set.Backend = r.Backend
		q.saveSettings(ctx, tr, set)
	}
	tl := &timeline{log: j.log, start: time.Now()}
	baseCalls := 0
	// What the run spent before this stretch, by role, when known: the
	// cost recorded with the progress is of it and this stretch's calls.
	var baseUsage llm.UsageByRole
	baseKnown := true
	if started {
		saved, err := r.Saved(ctx, run.Thread)
		if err == nil {
			tot := saved.Usage.Total()
			run.Tokens, run.Calls = int64(app.Tokens(tot.Usage)), tot.Calls
			run.Cost, baseUsage = app.CostUSD(saved.Usage, r.Models, r.Prices), saved.Usage
		}
		baseKnown = err == nil
		tl.base, baseCalls = int(run.Tokens), run.Calls
	}
	opts := []research.RunOption{research.Thread(run.Thread), research.RunID(run.ID), research.Journal(tr.Journal()),
		research.Observe(func(a research.Activity) {
			tl.usage = tl.usage.Merge(a.Usage)
			if a.Kind == research.ActivityToken {
				j.log.token(tokenData{Text: a.Token, Restart: a.Restart})
				return
			}
			tl.activity(researchActivity(a))
			if a.Usage != nil {
				tot := tl.usage.Total()
				tr.Run.Cost = nil
				if baseKnown {
					tr.Run.Cost = app.CostUSD(baseUsage.Merge(tl.usage), r.Models, r.Prices)
				}
				tr.Progress(ctx, int64(tl.tokens()), baseCalls+tot.Calls)
			}
		}),
		research.ObserveSteps(func(s research.StepState) { j.log.emit(EventState, stateOf(s)) }),
	}
	var rep *research.Report
	if started {
		if len(j.answer) > 0 {
			ans, err := reviewAnswer(j.answer)
			if err != nil { // checked when the answer came: not reached
				q.fail(ctx, j, tr, err.Error())
				return
			}
			opts = append(opts, research.Answer(ans))
		}
		rep, err = r.Resume(ctx, run.Thread, opts...)
	} else {
		if set.Review {
			opts = append(opts, research.Review(true))
		}
		rep, err = r.Run(ctx, run.Question, opts...)
	}
	if rep == nil {
		_, why := outcome(ctx, err)
		q.finish(ctx, j, tr, runstore.StatusFailed, why, nil, nil)
		return
	}
	var waiting *Interrupt
	if rep.Review != nil {
		waiting = &Interrupt{Kind: InterruptReview, Review: rep.Review}
	}
	q.conclude(ctx, j, tr, err, rep.Usage, app.CostUSD(rep.Usage, r.Models, r.Prices), waiting, func(docErr error) ([]byte, error) {
		return app.PricedResearchDocument(tr.Ref(), rep, r.Models, r.Prices, docErr)
	}, func(st runstore.Status) {
		app.MeterRun(ctx, telemetry.RunKindResearch, st, rep.Usage, r.Models, r.Prices)
	})
}

// conclude records how a stretch that produced a result ended: what it
// spent (usage, and its cost in US dollars, nil when unknown), and the
// interrupt it waits on or its document; meter records the stretch in the
// metrics (runs by status, cost) with its final status.
func (q *queue) conclude(ctx context.Context, j *job, tr *app.Tracker, runErr error, usage llm.UsageByRole, cost *float64, waiting *Interrupt,
	document func(docErr error) ([]byte, error), meter func(runstore.Status)) {
	status, why := outcome(ctx, runErr)
	defer func() { meter(status) }()
	tot := usage.Total()
	tr.Run.Tokens, tr.Run.Calls, tr.Run.Cost = int64(app.Tokens(tot.Usage)), tot.Calls, cost
	if status == runstore.StatusNeedsInput && waiting != nil {
		q.finish(ctx, j, tr, status, why, nil, waiting)
		return
	}
	var docErr error
	if runErr != nil {
		docErr = errors.New(q.redact(why))
	}
	doc, err := document(docErr)
	if err != nil {
		status, why, doc = runstore.StatusFailed, "encoding the report: "+err.Error(), nil
	}
	q.finish(ctx, j, tr, status, why, doc, nil)
}

// reviewAnswer reads the answer to a review: a string as the CLI takes it
// ("ok", "stop", queries separated by ";") or a research.ReviewAnswer.
func reviewAnswer(raw json.RawMessage) (research.ReviewAnswer, error) {
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return app.ParseReviewAnswer(text)
	}
	return app.ParseReviewAnswer(string(raw))
}

func (q *queue) agent(ctx context.Context, j *job, tr *app.Tracker, set app.Settings, started bool) {
	run := tr.Run
	a, err := q.eng.Agent(ctx, set, q.st.Checkpointer)
	if err != nil {
		q.fail(ctx, j, tr, "setting up the agent: "+err.Error())
		return
	}
	if a.Close != nil {
		defer a.Close()
	}
	if set.Agent != nil && set.Agent.Workspace != a.Workspace {
		set.Agent.Workspace = a.Workspace
		q.saveSettings(ctx, tr, set)
	}
	// The tokens and calls of the timeline and of the run's record: what
	// the run had spent before this stretch, and what its model calls
	// spend now (the meter).
	tl := &timeline{log: j.log, start: time.Now(), base: int(run.Tokens)}
	baseTokens, baseCalls := run.Tokens, run.Calls
	observe := func(ev nodes.AgentEvent) {
		var spent llm.Tally
		if a.Meter != nil {
			tl.usage = a.Meter.Snapshot()
			spent = tl.usage.Total()
		}
		tl.activity(agentActivity(ev))
		tr.Progress(ctx, baseTokens+int64(app.Tokens(spent.Usage)), baseCalls+spent.Calls)
	}
	opts := []graph.RunOption{graph.Thread(run.Thread), graph.RunID(run.ID)}
	var res *nodes.AgentResult
	if started {
		if len(j.answer) > 0 {
			var text string
			if err := json.Unmarshal(j.answer, &text); err != nil {
				q.fail(ctx, j, tr, "the answer to an agent's question is a string")
				return
			}
			opts = append(opts, graph.Answer(text))
		}
		res, err = a.Agent.Resume(ctx, observe, opts...)
	} else {
		res, err = a.Agent.Run(ctx, run.Question, observe, opts...)
	}
	if res == nil {
		_, why := outcome(ctx, err)
		q.finish(ctx, j, tr, runstore.StatusFailed, why, nil, nil)
		return
	}
	var waiting *Interrupt
	if res.Waiting != nil {
		waiting = &Interrupt{Kind: InterruptQuestion, Question: app.CleanText(res.Waiting.Question)}
	}
	if err == nil {
		// An agent that gave up, ran out of steps or got stuck did not do
		// its task: the run fails, its best effort in the document.
		maxSteps := 0
		if set.Agent != nil {
			maxSteps = set.Agent.MaxSteps
		}
		if st, why := app.AgentOutcome(res, maxSteps); st == runstore.StatusFailed {
			err = errors.New(why)
		}
	}
	models := map[string]string{llm.RoleAgent: a.Model}
	q.conclude(ctx, j, tr, err, res.Usage, app.CostUSD(res.Usage, models, a.Prices), waiting, func(docErr error) ([]byte, error) {
		return json.MarshalIndent(app.PricedAgentResultDoc(tr.Ref(), res, a.Model, a.Prices, docErr), "", "  ")
	}, func(st runstore.Status) { app.MeterRun(ctx, telemetry.RunKindAgent, st, res.Usage, models, a.Prices) })
}

// researchActivity is a research activity as an event.
func researchActivity(a research.Activity) Activity {
	out := Activity{Kind: string(a.Kind), Text: app.ActivityLine(a), Node: a.Node, Step: a.Step, Queries: a.Queries, Query: a.Query,
		Sources: a.Sources, Labels: a.Labels, Loop: a.Loop, Cited: a.Cited, Dropped: a.Dropped, Error: a.Error}
	if r := a.Reflection; r != nil {
		out.Reflection = &Reflection{IsSufficient: r.IsSufficient, KnowledgeGap: r.KnowledgeGap, FollowUpQueries: r.FollowUpQueries}
		if out.Reflection.FollowUpQueries == nil {
			out.Reflection.FollowUpQueries = []string{}
		}
	}
	return out
}

// maxToolOutput bounds a tool's output in an event.
const maxToolOutput = 4000

// agentActivity is an agent step as an event.
func agentActivity(ev nodes.AgentEvent) Activity {
	out := Activity{Kind: "agent_" + string(ev.Kind), Text: strings.Join(app.AgentLines(ev), "\n"), Step: ev.Step,
		Thought: app.CleanText(ev.Thought), Tool: ev.Tool, Failed: ev.Failed, DurationMS: ev.Duration.Milliseconds(), Status: string(ev.Status)}
	for _, c := range ev.Calls {
		out.Calls = append(out.Calls, ToolCall{Name: c.Name, Arguments: app.OneLine(string(c.Arguments), 2000)})
	}
	if ev.Output != "" {
		out.Output = clipRunes(app.CleanText(ev.Output), maxToolOutput)
	}
	return out
}

func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// stateOf is the state event of a step: what the step changed, in brief.
func stateOf(s research.StepState) StateData {
	st := s.State
	v := StateValues{Queries: st.Queries, Loops: st.Loops, Findings: len(st.Findings), Sources: len(st.Gathered()),
		Answered: st.Answer != ""}
	if v.Queries == nil {
		v.Queries = []string{}
	}
	nodesRan := s.Nodes
	if nodesRan == nil {
		nodesRan = []string{}
	}
	return StateData{Step: s.Step, Nodes: nodesRan, Values: v}
}
