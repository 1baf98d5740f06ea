package graph

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Conditions callers branch on with errors.Is.
var (
	// ErrRecursionLimit: the run took as many steps as its recursion limit
	// allows and still had work to do. The error is a *RecursionError.
	ErrRecursionLimit = errors.New("graph: recursion limit reached")
	// ErrConflict: two tasks of one step set the same field. *ConflictError.
	ErrConflict = errors.New("graph: conflicting writes")
	// ErrTimeout: a node attempt ran longer than its timeout.
	ErrTimeout = errors.New("graph: node timed out")
	// ErrNoCheckpointer: a thread was named but the graph has no Checkpointer.
	ErrNoCheckpointer = errors.New("graph: no checkpointer")
	// ErrNothingToResume: Resume found no checkpoint for the thread.
	ErrNothingToResume = errors.New("graph: nothing to resume")
	// ErrInterrupted: the run paused at an interrupt and waits for Resume.
	// The error is an *InterruptError listing the pending interrupts.
	ErrInterrupted = errors.New("graph: run paused at an interrupt")
	// ErrBadAnswer: Resume was given answers that match no pending interrupt.
	ErrBadAnswer = errors.New("graph: answers do not match the pending interrupts")
	// ErrCheckpointTooLarge: a state, payload or update is larger than the
	// checkpoint size limit (WithMaxCheckpointBytes).
	ErrCheckpointTooLarge = errors.New("graph: checkpoint data over the size limit")
	// ErrCheckpointFormat: a stored checkpoint was written in a format this
	// version does not read.
	ErrCheckpointFormat = errors.New("graph: unknown checkpoint format")
)

// NodeError is a failure of one node. errors.Is and errors.As see through it
// to the node's own error.
type NodeError struct {
	Node     string
	Step     int
	Attempts int // attempts made, when the node has a retry policy
	Err      error
}

func (e *NodeError) Error() string {
	if e.Attempts > 1 {
		return fmt.Sprintf("graph: node %q failed in step %d after %d attempts: %v", e.Node, e.Step, e.Attempts, e.Err)
	}
	return fmt.Sprintf("graph: node %q failed in step %d: %v", e.Node, e.Step, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

// PanicError is a panic in a node or router, recovered, with its stack.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n\n%s", e.Value, e.Stack) }

// RecursionError reports a run stopped by its recursion limit: the run
// (Invoke, Stream, or one Resume) took Limit steps and still had work to
// do. On a thread, the steps it took are stored: Resume goes on from there,
// with the same limit or another, each invocation counting its own steps.
type RecursionError struct {
	Limit  int      // the limit in steps
	Next   []string // the nodes that would have run next
	Thread string   // the run's thread, "" without one
}

func (e *RecursionError) Error() string {
	then := "raise it with graph.WithRecursionLimit or graph.RecursionLimit if the graph needs more steps, or check the exit condition of its loop"
	if e.Thread != "" {
		then = fmt.Sprintf("the steps taken are stored: Resume thread %q to go on (each invocation may take as many steps as its limit), or check the exit condition of its loop", e.Thread)
	}
	return fmt.Sprintf("graph: recursion limit of %d steps reached with %s still to run; %s",
		e.Limit, strings.Join(e.Next, ", "), then)
}

func (e *RecursionError) Is(target error) bool { return target == ErrRecursionLimit }

// ConflictError reports two tasks of one step setting the same field.
type ConflictError struct {
	Field string    // Go name of the field
	Nodes [2]string // the two nodes, in task order
	Step  int
}

func (e *ConflictError) Error() string {
	who := fmt.Sprintf("nodes %q and %q", e.Nodes[0], e.Nodes[1])
	if e.Nodes[0] == e.Nodes[1] {
		who = fmt.Sprintf("two tasks of node %q", e.Nodes[0])
	}
	return fmt.Sprintf("graph: %s both set field %s in step %d; a last-value field takes one write per step — declare it with graph.Append or graph.Reduce if several tasks contribute to it",
		who, e.Field, e.Step)
}

func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// RouteError reports a route (from a router or a Command) that the graph does
// not allow: an undeclared destination, an unknown node, a Send to a node that
// is not a task node, or a plain route to a task node.
type RouteError struct {
	From   string // the node whose edge or Command routed
	To     string
	Reason string
}

func (e *RouteError) Error() string {
	return fmt.Sprintf("graph: route from %q to %q: %s", e.From, e.To, e.Reason)
}

// PayloadError reports a Send whose Arg is not the type its task node takes.
type PayloadError struct {
	Node string
	Want reflect.Type
	Got  reflect.Type // nil for a nil Arg
}

func (e *PayloadError) Error() string {
	got := "nil"
	if e.Got != nil {
		got = e.Got.String()
	}
	return fmt.Sprintf("graph: Send to task node %q carries %s, but the task takes %s", e.Node, got, e.Want)
}

// CompileError lists every problem Compile found, each naming its offender.
type CompileError struct {
	Problems []error
}

func (e *CompileError) Error() string {
	if len(e.Problems) == 1 {
		return "graph: " + e.Problems[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "graph: %d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		b.WriteString(p.Error())
	}
	return b.String()
}

func (e *CompileError) Unwrap() []error { return e.Problems }

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
