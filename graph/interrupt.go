package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Interrupt pauses the run to ask a person (or any outside party) for an
// answer, in the manner of LangGraph's interrupt(): the node calls
//
//	answer, err := graph.Interrupt[Approval](ctx, Proposal{Queries: qs})
//	if err != nil {
//		return graph.Update[S]{}, err // the run pauses here
//	}
//
// The first time, Interrupt records payload and returns an error matching
// ErrInterrupted, which the node returns. The other tasks of the step run to
// the end and are stored, and the run stops: Invoke returns an
// *InterruptError listing the pending interrupts, Stream ends with an
// EventInterrupt, and State reports them. Resume with Answer (or AnswerFor,
// when several wait) runs the node again from its start, and this time
// Interrupt returns the answer, decoded from JSON into A.
//
// Because the node runs again, the work it does before Interrupt is done
// twice: keep it cheap and free of side effects, or put it in an earlier
// node. A node may call Interrupt several times; the calls are matched to
// answers by their order in the node (and, inside a subgraph, by the inner
// node and task that made them), so the order must not depend on anything
// but the state and the answers. A node that calls Interrupt and ignores its
// error is paused all the same.
//
// Interrupt needs a run with a checkpointer and a Thread; elsewhere it
// returns ErrNoCheckpointer. Nodes of subgraphs may call it: the interrupt
// pauses the parent's task that runs the subgraph.
func Interrupt[A, P any](ctx context.Context, payload P) (A, error) {
	var zero A
	info, _ := ctx.Value(taskKey{}).(*taskInfo)
	if info == nil || info.hi == nil {
		return zero, fmt.Errorf("%w: graph.Interrupt needs a run with a checkpointer and a thread (graph.WithCheckpointer and graph.Thread)", ErrNoCheckpointer)
	}
	h := info.hi.root
	h.mu.Lock()
	k := info.hi.calls
	info.hi.calls++
	h.mu.Unlock()
	id := interruptID(h.base, info.hi.key+"#"+strconv.Itoa(k))
	if raw, ok := h.answer(id); ok {
		var a A
		if err := json.Unmarshal(raw, &a); err != nil {
			err = &AnswerError{ID: id, Node: info.path, Want: reflect.TypeFor[A]().String(), Err: err}
			h.reject(id, err)
			return zero, err
		}
		return a, nil
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return zero, fmt.Errorf("graph.Interrupt in node %q: the payload cannot be encoded as JSON: %w", info.path, err)
	}
	h.raise(PendingInterrupt{ID: id, Kind: InterruptNode, Node: info.path, Task: h.task, Step: h.step, Payload: data, Time: time.Now()}, info.hi.key)
	info.hi.stopped = true
	return zero, errInterruptRaised
}

// errInterruptRaised is what Interrupt returns when it pauses the node.
var errInterruptRaised = fmt.Errorf("%w: the node waits for an answer", ErrInterrupted)

// InterruptKind says what paused a run.
type InterruptKind string

// The kinds of interrupt.
const (
	InterruptNode   InterruptKind = "node"   // graph.Interrupt, called by the node
	InterruptBefore InterruptKind = "before" // WithInterruptBefore: the node is about to run
	InterruptAfter  InterruptKind = "after"  // WithInterruptAfter: the node has run
)

// PendingInterrupt is an interrupt a paused run waits on.
type PendingInterrupt struct {
	// ID names the interrupt for AnswerFor. It is stable: the same interrupt
	// has the same ID in every process.
	ID   string        `json:"id"`
	Kind InterruptKind `json:"kind"`
	// Node is the node that was interrupted, as "outer/inner" for a node of a
	// subgraph.
	Node string `json:"node"`
	// Task is the task's index within its step; -1 for InterruptAfter, which
	// pauses the whole step that follows.
	Task int `json:"task"`
	// Step is the step that paused (the next step of the thread's newest
	// checkpoint).
	Step int `json:"step"`
	// Payload is what the node passed to Interrupt, as JSON; empty for
	// breakpoints. PayloadOf decodes it.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Time is when the node raised it (zero for breakpoints).
	Time time.Time `json:"time,omitzero"`
}

// PayloadOf decodes the payload of an interrupt into P.
func PayloadOf[P any](pi PendingInterrupt) (P, error) {
	var p P
	if len(pi.Payload) == 0 {
		return p, fmt.Errorf("graph: interrupt %s (%s %s) has no payload", pi.ID, pi.Kind, pi.Node)
	}
	if err := json.Unmarshal(pi.Payload, &p); err != nil {
		return p, fmt.Errorf("graph: the payload of interrupt %s from node %q is not a %s: %w", pi.ID, pi.Node, reflect.TypeFor[P](), err)
	}
	return p, nil
}

// InterruptError is what Invoke and Resume return when the run paused: the
// interrupts it waits on. The state returned with it is the state before the
// paused step; the step's finished tasks are stored and do not run again.
type InterruptError struct {
	Thread     string
	Interrupts []PendingInterrupt
}

func (e *InterruptError) Error() string {
	parts := make([]string, len(e.Interrupts))
	for i, in := range e.Interrupts {
		switch in.Kind {
		case InterruptNode:
			parts[i] = fmt.Sprintf("%s in node %q", in.ID, in.Node)
		default:
			parts[i] = fmt.Sprintf("%s %s node %q", in.ID, in.Kind, in.Node)
		}
	}
	return fmt.Sprintf("graph: thread %q paused at %s; continue it with Resume (graph.Answer or graph.AnswerFor give the answers)",
		e.Thread, strings.Join(parts, ", "))
}

func (e *InterruptError) Is(target error) bool { return target == ErrInterrupted }

// AnswerError reports an answer that does not decode into the type the node
// asked for. The interrupt stays pending, without that answer: resume again
// with one of the right type.
type AnswerError struct {
	ID   string // the interrupt
	Node string
	Want string // the Go type Interrupt asked for
	Err  error
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("graph: the answer to interrupt %s of node %q is not a %s: %v; it was set aside and the interrupt still waits", e.ID, e.Node, e.Want, e.Err)
}

func (e *AnswerError) Unwrap() error { return e.Err }

// Answer resumes a paused thread with the answer to its one pending
// interrupt. When several are pending, use AnswerFor.
func Answer(v any) RunOption {
	return runFunc(func(r *runSettings) { r.answers = append(r.answers, givenAnswer{value: v}) })
}

// AnswerFor resumes a paused thread with the answer to the interrupt whose
// ID is id; give one per interrupt to answer several at once.
func AnswerFor(id string, v any) RunOption {
	return runFunc(func(r *runSettings) { r.answers = append(r.answers, givenAnswer{id: id, byID: true, value: v}) })
}

type givenAnswer struct {
	id    string
	byID  bool
	value any
}

// hitl is the interrupt state of one top-level task attempt, shared with the
// tasks of subgraphs it runs.
type hitl struct {
	mu       sync.Mutex
	base     string // thread, checkpoint and task index: the root of interrupt IDs
	node     string
	task     int
	step     int
	answers  []AnswerRecord
	raised   []PendingInterrupt
	keys     []string // per raised interrupt, the key of the task that raised it
	rejected []*AnswerError
}

func (h *hitl) answer(id string) (json.RawMessage, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.answers {
		if a.ID == id {
			return a.Value, true
		}
	}
	return nil, false
}

func (h *hitl) raise(pi PendingInterrupt, key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.raised = append(h.raised, pi)
	h.keys = append(h.keys, key)
}

// raisedUnder returns the interrupts raised by tasks whose key begins
// with prefix: those of one subgraph run and the runs below it.
func (h *hitl) raisedUnder(prefix string) []PendingInterrupt {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []PendingInterrupt
	for i, k := range h.keys {
		if strings.HasPrefix(k, prefix) {
			out = append(out, h.raised[i])
		}
	}
	return out
}

func (h *hitl) reject(id string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ae *AnswerError
	errors.As(err, &ae)
	h.rejected = append(h.rejected, ae)
	h.answers = slices.DeleteFunc(h.answers, func(a AnswerRecord) bool { return a.ID == id })
}

// interruptID derives a short, stable id from where the interrupt happened.
func interruptID(base, key string) string {
	sum := sha256.Sum256([]byte(base + "\x00" + key))
	return hex.EncodeToString(sum[:8])
}

// breakpointID is the id of a static interrupt.
func breakpointID(thread, cpID string, kind InterruptKind, node string) string {
	return interruptID(thread+"\x00"+cpID, string(kind)+"\x00"+node)
}
