package graph

import "context"

// Emit sends v to the stream of the run executing the calling node, as an
// EventCustom event naming the node. LLM tokens travel this way: a node that
// streams a model reply emits each delta. Emit is a no-op when ctx does not
// belong to a running node or nobody streams the run (Invoke), so nodes can
// call it unconditionally. It blocks while the consumer is slow and returns
// early if ctx is cancelled.
func Emit(ctx context.Context, v any) {
	info, _ := ctx.Value(taskKey{}).(*taskInfo)
	if info == nil || info.sink == nil {
		return
	}
	c := custom{node: info.path, step: info.step, task: info.index, value: v}
	if n := info.nest; n != nil && n.in != "" {
		c.value = &upEvent{kind: EventCustom, ns: n.in, value: v}
	}
	select {
	case info.sink <- c:
	case <-ctx.Done():
	}
}

// Streaming reports whether Emit from ctx reaches a stream consumer. Nodes can
// skip building expensive custom events when it is false.
func Streaming(ctx context.Context) bool {
	info, _ := ctx.Value(taskKey{}).(*taskInfo)
	return info != nil && info.sink != nil
}

// taskKey is the context key under which a running task's taskInfo is found.
type taskKey struct{}

// taskInfo identifies a running task to Emit and to nested graphs.
type taskInfo struct {
	path  string // node name, prefixed by the parent's path inside a subgraph ("outer/inner")
	step  int
	index int
	sink  chan<- custom // nil when nobody listens

	// hi is the task's interrupt state; nil when the run cannot be
	// interrupted.
	hi *taskHITL
	// nest is what the task gives the subgraph runs it starts when its run
	// checkpoints or streams its subgraphs' events; nil otherwise.
	nest *nestInfo
}

// taskHITL is one task's interrupt state: the top-level task's shared state
// (root), this task's place below it (key, "" for the top-level task), the
// Interrupt calls of this attempt, the subgraph runs it started, and whether
// it was interrupted.
type taskHITL struct {
	root    *hitl
	key     string
	calls   int
	subruns int
	stopped bool
}

// custom is an Emit value on its way to the stream.
type custom struct {
	node  string
	step  int
	task  int
	value any
}
