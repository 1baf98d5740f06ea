package nodes

import (
	"context"
	"errors"
	"time"

	"github.com/deepgraph/deepgraph/llm"
)

// The bounds of the default AgentConfig.TimeoutGrace: a fifth of the time
// a run had when it started, at least MinTimeoutGrace and at most
// MaxTimeoutGrace (MaxTimeoutGrace too for a run without a deadline).
const (
	MinTimeoutGrace = 2 * time.Second
	MaxTimeoutGrace = 30 * time.Second
)

const timeoutFinalPrompt = `You have run out of time and cannot use tools any more. Write your best final answer now from what you found so far, citing the sources' labels as before. Say clearly what is unfinished or uncertain.`

// timeoutGrace is the budget of the best-effort answer of a run that
// starts now with ctx (see AgentConfig.TimeoutGrace); 0 means none.
func (a *Agent) timeoutGrace(ctx context.Context) time.Duration {
	return graceFor(ctx, a.cfg.TimeoutGrace)
}

// graceFor is the budget of the best-effort answer (an agent's) or summary
// (a flow's) of a run that starts now with ctx, configured as g (0: the
// default, negative: none).
func graceFor(ctx context.Context, g time.Duration) time.Duration {
	switch {
	case g < 0:
		return 0
	case g > 0:
		return g
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		return MaxTimeoutGrace
	}
	return min(max(time.Until(deadline)/5, MinTimeoutGrace), MaxTimeoutGrace)
}

// timedOutFresh is the context of a best-effort call of a run stopped by
// ctx's deadline: ctx's values, a deadline grace from now. ok is false
// when the run did not time out or grace is 0.
func timedOutFresh(ctx context.Context, grace time.Duration) (_ context.Context, _ context.CancelFunc, ok bool) {
	if grace <= 0 || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, nil, false
	}
	fresh, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	return fresh, cancel, true
}

// timedOutResult is the result of a run stopped by ctx's deadline in state
// s (its last completed step): the best-effort answer from what it had
// gathered, written without tools on a fresh context that keeps ctx's
// values, bounded by grace. ok is false — the caller keeps the failed
// result — when the run did not time out, grace is 0, or the call failed
// or answered nothing. observe, if not nil, gets the done event.
func (a *Agent) timedOutResult(ctx context.Context, grace time.Duration, s AgentState, observe func(AgentEvent)) (res *AgentResult, ok bool) {
	if s.Task == "" || (s.Status != "" && s.Answer != "") {
		return nil, false // nothing to answer (a resume stopped before its first step), or it had ended
	}
	fresh, cancel, ok := timedOutFresh(ctx, grace)
	if !ok {
		return nil, false
	}
	defer cancel()
	meter := new(llm.Meter)
	answer, err := a.closingAnswer(fresh, llm.Metered(a.cfg.Model, meter, llm.RoleAgent), s, timeoutFinalPrompt)
	if err != nil || answer == "" {
		return nil, false
	}
	text, cited, dropped := citeAnswer(answer, s.Sources)
	s.Status, s.Answer, s.Cited, s.Dropped = AgentTimedOut, text, cited, dropped
	s.Usage = s.Usage.Merge(meter.Snapshot())
	if observe != nil {
		observe(AgentEvent{Kind: AgentEventDone, Step: s.Steps, Status: AgentTimedOut, Answer: text})
	}
	return resultOf(s), true
}
