package llm

import (
	"context"
	"fmt"
	"iter"

	"github.com/deepgraph/deepgraph/graph"
	"github.com/deepgraph/deepgraph/schemas"
)

// Token is a piece of a model's streamed reply on its way through a graph
// stream (as an EmitDeltas custom event) to a CLI or an SSE client. The
// graph event around it names the node, step and task; Role says what the
// call was for.
type Token struct {
	Role      string `json:"role,omitempty"`      // RoleAnswer, RoleAgent, … as given to EmitDeltas
	Content   string `json:"content,omitempty"`   // visible text
	Reasoning string `json:"reasoning,omitempty"` // thinking text, where the provider streams it separately
	// Restart says the call's stream broke off and it is being sent again:
	// drop the tokens of this call (same node and task) shown so far. See
	// Delta.Restart.
	Restart bool `json:"restart,omitempty"`
}

// EmitDeltas makes the call stream and sends each delta to the graph stream
// of the node running under ctx, as a Token carrying role (graph.Emit). When
// nobody consumes that stream (Invoke, or ctx outside a graph) it does
// nothing, so the provider does not stream for nothing. It keeps a delta
// callback set by an earlier option (OnDelta) and calls it first.
//
// The ctx is the node's: pass the one the node received.
func EmitDeltas(ctx context.Context, role string) Option {
	if !graph.Streaming(ctx) {
		return func(*Request) {}
	}
	return chainDelta(func(d Delta) {
		if d.Content == "" && d.Reasoning == "" && !d.Restart {
			return
		}
		graph.Emit(ctx, Token{Role: role, Content: d.Content, Reasoning: d.Reasoning, Restart: d.Restart})
	})
}

// chainDelta returns an option setting OnDelta to f, after any callback
// already set.
func chainDelta(f func(Delta)) Option {
	return func(r *Request) {
		if prev := r.OnDelta; prev != nil {
			r.OnDelta = func(d Delta) {
				prev(d)
				f(d)
			}
			return
		}
		r.OnDelta = f
	}
}

// Stream calls m with streaming on and yields the reply's deltas as they
// arrive; a failed call ends with one (Delta{}, err). Each range over the
// result makes one call. Breaking out of the loop cancels the call and waits
// for it to return, so no goroutine outlives the loop.
//
// A provider that ignores OnDelta still works: its whole reply arrives as
// one delta at the end. Stream drops the final Response; to also get the
// usage or tool calls, call Generate with OnDelta (or wrap m with Metered).
func Stream(ctx context.Context, m Model, msgs []schemas.Message, opts ...Option) iter.Seq2[Delta, error] {
	return func(yield func(Delta, error) bool) {
		if m == nil {
			yield(Delta{}, ErrNoModel)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		deltas := make(chan Delta)
		var (
			resp *Response
			err  error
			seen bool // a delta reached the consumer
		)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer close(deltas)
			// A panicking provider must not take the program down from a
			// goroutine the caller cannot recover in: it ends the stream
			// with an error instead.
			defer func() {
				if r := recover(); r != nil {
					resp, err = nil, fmt.Errorf("llm: the model panicked while streaming: %v", r)
				}
			}()
			send := chainDelta(func(d Delta) {
				select {
				case deltas <- d:
				case <-ctx.Done():
				}
			})
			resp, err = m.Generate(ctx, msgs, append(opts[:len(opts):len(opts)], send)...)
		}()
		// However the loop ends (break, panic, completion), stop the call and
		// wait for it.
		defer func() {
			cancel()
			for range deltas {
			}
			<-done
		}()
		for d := range deltas {
			seen = true
			if !yield(d, nil) {
				return
			}
		}
		<-done
		if err != nil {
			yield(Delta{}, err)
			return
		}
		if !seen && resp != nil && (resp.Content != "" || resp.Reasoning != "") {
			yield(Delta{Content: resp.Content, Reasoning: resp.Reasoning}, nil)
		}
	}
}
