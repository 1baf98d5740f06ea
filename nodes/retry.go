package nodes

import (
	"time"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/llm"
)

// DefaultModelRetry is the retry policy of the model-calling nodes that this
// package and package research build — the agent's think and best-effort
// steps, the flow's plan, revise and summarize steps, the research graph's
// generate_query, web_research, reflection and finalize_answer: up to 3
// attempts, 1s then 2s apart (with jitter), on transient model errors only
// (llm.IsTransient: rate limits, outages, streams cut off, one call's
// timeout). A rejected key, a refused request or a cancelled run fails at
// once.
//
// Errors the model's client already retried are not retried again
// (llm.IsFinal, see ModelRetry): one call has one retry budget, the
// client's (llm.ClientConfig.MaxRetries). The node's attempts are for
// models whose client does not retry: retries off, fakes, your own Model.
func DefaultModelRetry() graph.RetryPolicy {
	return graph.RetryPolicy{
		MaxAttempts:     3,
		InitialInterval: time.Second,
		BackoffFactor:   2,
		MaxInterval:     30 * time.Second,
		Jitter:          true,
		RetryOn:         llm.IsTransient,
	}
}

// ModelRetry is the node option retrying a node that calls a model: by p, or
// by DefaultModelRetry when p is nil. A p without RetryOn retries transient
// model errors only (llm.IsTransient), not graph.DefaultRetryOn's every
// error; MaxAttempts 1 turns retries off. Whatever the RetryOn, an error
// the model's client retried already (llm.IsFinal) is not retried: a node
// retry would send the call again with a fresh budget each time (with
// retries: 3, 4 sends per attempt, 12 per call with 3 attempts). Add it to
// your own model nodes:
//
//	g.AddNode("plan", nodes.Structured[State, Plan]{…}.Node(), nodes.ModelRetry(nil))
//
// AgentConfig, FlowConfig and research.Config take such a p as ModelRetry.
func ModelRetry(p *graph.RetryPolicy) graph.NodeOption {
	policy := DefaultModelRetry()
	if p != nil {
		policy = *p
		if policy.RetryOn == nil {
			policy.RetryOn = llm.IsTransient
		}
	}
	on := policy.RetryOn
	policy.RetryOn = func(err error) bool { return !llm.IsFinal(err) && on(err) }
	return graph.WithRetry(policy)
}
