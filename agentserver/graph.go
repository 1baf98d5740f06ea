package agentserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepgraph/deepgraph/graph"
)

// Graph is a graph the server serves: make one with Compiled.
type Graph interface {
	// describe is what the assistants endpoints show.
	describe() graphInfo
	// run executes one run, calling emit for each stream event, and says
	// how it ended.
	run(ctx context.Context, req runSpec, emit func(streamEvent)) runEnd
	state(ctx context.Context, at graph.Ref) (threadState, error)
	history(ctx context.Context, at graph.Ref, limit int) ([]threadState, error)
	update(ctx context.Context, at graph.Ref, values json.RawMessage, asNode string) (string, error)
	// values reads the newest state's values of a thread, nil when it has
	// none, with the interrupts it waits on.
	values(ctx context.Context, thread string) (json.RawMessage, []interruptOut, error)
	// pending reads what a run without input or command would continue on
	// a thread: the nodes its newest checkpoint has yet to run (none: such
	// a run starts the graph over) and the interrupts they wait on for an
	// answer (command.resume).
	pending(ctx context.Context, thread string) (next []string, waiting []graph.PendingInterrupt, err error)
}

// RunConfig is what a run's body asks of the graph: config.configurable
// merged with context, and the run's metadata. Build reads it.
type RunConfig struct {
	// Configurable holds config.configurable and context, by key, as JSON.
	Configurable map[string]json.RawMessage
	// GraphID and AssistantID name what the run runs; ThreadID and RunID
	// the run.
	GraphID, AssistantID, ThreadID, RunID string
}

// ErrBadConfig marks a Build error that is the request's fault (a
// configuration the server does not offer): the run fails with it as a
// ValueError.
var ErrBadConfig = errors.New("agentserver: bad run configuration")

// Option configures a served graph.
type Option[S any] func(*served[S])

// Description is the assistant's description.
func Description[S any](text string) Option[S] {
	return func(g *served[S]) { g.description = text }
}

// AssistantMetadata is the assistant's metadata, beside the "created_by"
// LangGraph sets: what a client may read of the graph before a run, such
// as the configuration choices a run may make.
func AssistantMetadata[S any](md Metadata) Option[S] {
	return func(g *served[S]) { g.metadata = cloneMetadata(md) }
}

// Values sets how a state is shown to clients (the values of /state,
// /history and the values stream mode): the default is the state encoded
// as JSON, which must be an object.
func Values[S any](fn func(S) any) Option[S] {
	return func(g *served[S]) { g.valuesOf = fn }
}

// Input sets how a run's input object becomes the input of the graph: the
// state the run starts from and writes applied to it (see graph.InputWrites).
// The default decodes it with Compiled.DecodeWrites: its keys are the
// state's fields by their JSON names.
func Input[S any](fn func(cfg RunConfig, input json.RawMessage) (S, []graph.Write[S], error)) Option[S] {
	return func(g *served[S]) { g.input = fn }
}

// Build sets up each run from its configuration (the body's
// config.configurable and context): a graph built for it, to choose models
// or limits per run, and an observer of its events. The graph served is
// still the one given to Compiled, for reading and editing threads.
func Build[S any](fn func(ctx context.Context, cfg RunConfig) (RunSetup[S], error)) Option[S] {
	return func(g *served[S]) { g.build = fn }
}

// RunSetup is what Build sets up for one run.
type RunSetup[S any] struct {
	// Graph runs the run (nil: the served graph). It must have the served
	// graph's checkpointer.
	Graph *graph.Compiled[S]
	// Observe, when set, sees each engine event of the run and may add
	// stream events: out.Custom a custom event (deepgraph's activity
	// timeline), out.Message a message chunk (a model's tokens). Emitted
	// values then reach the custom mode only through it, but MessageChunk
	// values, which go to the messages mode as they are. Of a subgraph's
	// events (stream_subgraphs) it sees the Emit values, as without it.
	Observe func(ev graph.Event[S], out Emitter)
	// Close, when set, is called when the run ends.
	Close func()
	// Context, when set, is the context the run runs under: Build's, with
	// what the program adds (a trace span, telemetry). It must derive from
	// Build's, whose end stops the run.
	Context context.Context
	// End, when set, is told how the run ended — its status: success,
	// error or interrupted; and err, why it failed — before Close.
	End func(status string, err error)
	// Outcome, when set, judges the state a run ended with, when it ran
	// to its end: an error fails the run (status error) with it, though
	// the graph ended — an agent out of steps did not do its task.
	Outcome func(final S) error
}

// Interrupts sets how the graph's interrupts are shown to clients and how
// their answers (command.resume) are read: show turns an interrupt into the
// value clients see (default: its payload), answer turns a client's resume
// value into the answer the node receives (default: the value as it is).
// deepgraph shows its reviews as LangChain's HITLRequest so that Agent
// Chat UI renders them.
func Interrupts[S any](show func(graph.PendingInterrupt) any, answer func(pi graph.PendingInterrupt, resume json.RawMessage) (any, error)) Option[S] {
	return func(g *served[S]) { g.showInterrupt, g.answer = show, answer }
}

// Emitter sends stream events from a RunSetup's Observe.
type Emitter interface {
	// Custom sends v as a custom event.
	Custom(v any)
	// Message sends a chunk of a message being written by node.
	Message(node string, c MessageChunk)
}

// Compiled serves a compiled graph. The graph must have a checkpointer
// (graph.WithCheckpointer): threads live in it.
func Compiled[S any](c *graph.Compiled[S], opts ...Option[S]) Graph {
	g := &served[S]{c: c, keys: jsonKeys(reflect.TypeFor[S]())}
	for _, o := range opts {
		o(g)
	}
	return g
}

// served is a Graph over a *graph.Compiled[S].
type served[S any] struct {
	c             *graph.Compiled[S]
	description   string
	metadata      Metadata
	valuesOf      func(S) any
	input         func(RunConfig, json.RawMessage) (S, []graph.Write[S], error)
	build         func(context.Context, RunConfig) (RunSetup[S], error)
	showInterrupt func(graph.PendingInterrupt) any
	answer        func(graph.PendingInterrupt, json.RawMessage) (any, error)
	keys          map[string]bool // the state's JSON keys
}

// jsonKeys are the top-level JSON keys of a struct type.
func jsonKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return keys
	}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case name == "" && f.Anonymous:
			for k := range jsonKeys(f.Type) {
				keys[k] = true
			}
			continue
		case name == "":
			name = f.Name
		}
		keys[name] = true
	}
	return keys
}

// stateInput keeps the keys of an input object that are the state's: as
// LangGraph, a run ignores input keys its state does not have (Agent Chat
// UI sends context among them).
func (g *served[S]) stateInput(input json.RawMessage) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(input, &obj); err != nil {
		return nil, fmt.Errorf("input is not a JSON object: %w", err)
	}
	for k := range obj {
		if !g.keys[k] {
			delete(obj, k)
		}
	}
	return json.Marshal(obj)
}

// graphInfo is what the assistants endpoints say of a graph.
type graphInfo struct {
	description string
	metadata    Metadata
	nodes       []graphNode
	edges       []graphEdge
	stateSchema json.RawMessage
}

type graphNode struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Data string `json:"data"`
}

type graphEdge struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Conditional bool   `json:"conditional,omitempty"`
}

func (g *served[S]) describe() graphInfo {
	info := graphInfo{description: g.description, metadata: g.metadata}
	info.nodes, info.edges = edgesOf(g.c.Mermaid())
	schema, err := jsonschema.ForType(reflect.TypeFor[S](), &jsonschema.ForOptions{IgnoreInvalidTypes: true})
	if err == nil {
		info.stateSchema, _ = json.Marshal(schema)
	}
	if len(info.stateSchema) == 0 {
		info.stateSchema = json.RawMessage(`{"type":"object"}`)
	}
	return info
}

var (
	mermaidNode = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\s*([A-Za-z0-9_]+)(\(\[<p>(.*)</p>\]\)|\[\[(.*)\]\]|\((.*)\))(:::\w+)?$`)
	})
	mermaidEdge = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*([A-Za-z0-9_]+) (-->|-\.->) ([A-Za-z0-9_]+);$`) })
)

// edgesOf reads the nodes and edges of a graph from its Mermaid drawing,
// the one description of its edges the engine gives.
func edgesOf(mermaid string) ([]graphNode, []graphEdge) {
	names := map[string]string{}
	nodes := []graphNode{}
	edges := []graphEdge{}
	for line := range strings.SplitSeq(mermaid, "\n") {
		if m := mermaidNode().FindStringSubmatch(line); m != nil {
			name := m[3] + m[4] + m[5]
			name = strings.NewReplacer("<p>", "", "</p>", "", "&lt;", "<", "&gt;", ">", "&quot;", `"`, "&amp;", "&").Replace(name)
			names[m[1]] = name
			nodes = append(nodes, graphNode{ID: name, Name: name, Data: name})
			continue
		}
		if m := mermaidEdge().FindStringSubmatch(line); m != nil {
			edges = append(edges, graphEdge{Source: names[m[1]], Target: names[m[3]], Conditional: m[2] == "-.->"})
		}
	}
	return nodes, edges
}

// valuesJSON is a state as clients see it.
func (g *served[S]) valuesJSON(s S) json.RawMessage {
	var v any = s
	if g.valuesOf != nil {
		v = g.valuesOf(s)
	}
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(map[string]string{"__error__": "the state could not be encoded: " + err.Error()})
	}
	return data
}

func (g *served[S]) interruptsOut(pis []graph.PendingInterrupt) []interruptOut {
	out := make([]interruptOut, 0, len(pis))
	for _, pi := range pis {
		var v any = pi.Payload
		if len(pi.Payload) == 0 {
			v = map[string]string{"kind": string(pi.Kind), "node": pi.Node}
		}
		if g.showInterrupt != nil {
			v = g.showInterrupt(pi)
		}
		data, err := json.Marshal(v)
		if err != nil {
			data = json.RawMessage("null")
		}
		out = append(out, interruptOut{ID: pi.ID, Value: data})
	}
	return out
}

// emitter collects an Observe function's events.
type emitter struct {
	emit func(streamEvent)
	step int
}

func (e emitter) Custom(v any) { e.emit(streamEvent{mode: modeCustom, data: v}) }

func (e emitter) Message(node string, c MessageChunk) {
	e.emit(streamEvent{mode: modeMessages, data: messageTuple(node, e.step, c, "")})
}

// messageTuple is a messages-tuple event's data: [chunk, metadata]; ns is
// the namespace of the subgraph run whose node sent it ("" at the top).
func messageTuple(node string, step int, c MessageChunk, ns string) any {
	chunk := map[string]any{"type": "AIMessageChunk", "content": c.Content, "id": c.ID, "tool_call_chunks": []any{}}
	if c.Restart {
		chunk = map[string]any{"type": "ai", "content": "", "id": c.ID}
	}
	return []any{chunk, map[string]any{"langgraph_node": node, "langgraph_step": step, "tags": []string{}, "checkpoint_ns": ns}}
}

func (g *served[S]) run(ctx context.Context, req runSpec, emit func(streamEvent)) (end runEnd) {
	c := g.c
	var observe func(graph.Event[S], Emitter)
	var outcome func(S) error
	if g.build != nil {
		setup, err := g.build(ctx, req.config)
		if err != nil {
			return runEnd{err: fmt.Errorf("setting up the run: %w", err), bad: errors.Is(err, ErrBadConfig)}
		}
		if setup.Close != nil {
			defer setup.Close()
		}
		if setup.Graph != nil {
			c = setup.Graph
		}
		if setup.End != nil {
			runCtx := ctx
			defer func() {
				status, _ := statusOf(context.Cause(runCtx), end)
				setup.End(status, end.err)
			}()
		}
		if setup.Context != nil {
			ctx = setup.Context
		}
		observe = setup.Observe
		outcome = setup.Outcome
	}
	at := graph.Thread(req.thread)
	if req.checkpointID != "" {
		at = at.At(req.checkpointID)
	}
	opts := []graph.RunOption{at, graph.RunID(req.runID), graph.Durability(req.durability)}
	if req.interruptBefore != nil {
		opts = append(opts, graph.PauseBefore(req.interruptBefore...))
	}
	if req.interruptAfter != nil {
		opts = append(opts, graph.PauseAfter(req.interruptAfter...))
	}
	if req.recursionLimit > 0 {
		opts = append(opts, graph.RecursionLimit(req.recursionLimit))
	}
	if req.subgraphs {
		opts = append(opts, graph.StreamSubgraphs())
	}
	var events func(func(graph.Event[S], error) bool)
	// A run without input or command on a checkpoint with pending tasks —
	// the thread's newest, or the one it names — continues it, as LangGraph
	// does: the tasks that had not finished (a run cancelled, stopped or
	// failed; or, on a past checkpoint, the steps after it: Agent Chat UI's
	// regenerate) run, on a new branch for a past one; the others' writes
	// stand.
	continues := false
	if req.command == nil && isNull(req.input) {
		next, waiting, err := pendingOf(ctx, c, at)
		if err != nil {
			return runEnd{err: fmt.Errorf("reading the thread's pending tasks: %w", err)}
		}
		if len(waiting) > 0 {
			return runEnd{err: errWaiting(waiting), bad: true}
		}
		continues = len(next) > 0
	}
	switch {
	case continues:
		events = c.ResumeStream(ctx, opts...)
	case req.command != nil:
		ropts, err := g.commandOptions(ctx, c, at, req.command)
		if err != nil {
			return runEnd{err: err, bad: true}
		}
		events = c.ResumeStream(ctx, append(opts, ropts...)...)
	default:
		var in S
		if !isNull(req.input) {
			var ws []graph.Write[S]
			var err error
			if g.input != nil {
				in, ws, err = g.input(req.config, req.input)
			} else {
				var in json.RawMessage
				if in, err = g.stateInput(req.input); err == nil {
					ws, err = c.DecodeWrites(in)
				}
			}
			if err != nil {
				return runEnd{err: fmt.Errorf("input: %w", err), bad: true}
			}
			opts = append(opts, graph.InputWrites(ws...))
		}
		events = c.Stream(ctx, in, opts...)
	}
	out := emitter{emit: emit}
	var last S
	// The events of the modes the run records are built, the others not:
	// a step's values (and its checkpoint's), a task's update and input.
	wantValues := req.wants(modeValues, modeCheckpoints, modeDebug)
	wantCheckpoints := req.wants(modeCheckpoints, modeDebug)
	wantTasks := req.wants(modeTasks, modeDebug)
	wantUpdates := wantTasks || req.wants(modeUpdates)
	for ev, err := range events {
		if err != nil {
			end.err = err
			break
		}
		out.step = ev.Step
		// An event of a subgraph's run (stream_subgraphs) goes out as
		// "mode|namespace", with the subgraph's node, state and update.
		ns, node := ev.Namespace, ev.Node
		if ns != "" {
			node = node[strings.LastIndexByte(node, '/')+1:]
		}
		send := func(mode string, data any) { emit(streamEvent{mode: mode, ns: ns, data: data, step: ev.Step}) }
		switch ev.Kind {
		case graph.EventStep:
			if ns == "" {
				last = ev.State
			}
			if !wantValues {
				break
			}
			values := g.stateJSON(ev)
			send(modeValues, values)
			switch {
			case !wantCheckpoints:
			case ns == "":
				// The run's own is read from the thread (with its tasks'
				// records); described, for when the thread's newest is not
				// it yet (durability async or exit).
				ce := streamEvent{mode: modeCheckpoints, step: ev.Step}
				if ev.Checkpoint != nil {
					ce.data = ownCheckpoint{describeCheckpoint(values, ev.Checkpoint)}
				}
				emit(ce)
			case ev.Checkpoint != nil:
				// A subgraph's checkpoint, as the engine stored it: the
				// store's newest in its namespace may be a later one by now.
				emit(streamEvent{mode: modeCheckpoints, ns: ns, step: ev.Step, data: describeCheckpoint(values, ev.Checkpoint)})
			}
		case graph.EventTaskStart:
			if wantTasks {
				send(modeTasks, taskStart{ID: taskID(ev.Step, ev.Task), Name: node, Input: argOf(ev.Arg), Triggers: []string{}})
			}
		case graph.EventTaskEnd:
			if !wantUpdates {
				break
			}
			var errText *string
			var result json.RawMessage
			if ev.Err != nil {
				s := ev.Err.Error()
				errText = &s
			} else {
				result = updateOf(ev)
				send(modeUpdates, map[string]json.RawMessage{node: result})
			}
			if !wantTasks {
				break
			}
			send(modeTasks, taskEnd{ID: taskID(ev.Step, ev.Task), Name: node, Result: result, Error: errText, Interrupts: []interruptOut{}})
		case graph.EventCustom:
			if mc, ok := ev.Value.(MessageChunk); ok {
				send(modeMessages, messageTuple(node, ev.Step, mc, ns))
			} else if observe == nil {
				send(modeCustom, ev.Value)
			}
		case graph.EventInterrupt:
			intr := g.interruptsOut(ev.Interrupts)
			send(modeUpdates, map[string]any{"__interrupt__": intr})
			if ns == "" {
				last, end.interrupts = ev.State, intr
				emit(streamEvent{mode: modeValues, data: withInterrupts(g.valuesJSON(ev.State), intr)})
			}
		case graph.EventEnd:
			last = ev.State
		}
		// Observe sees a subgraph's Emit values, as without
		// stream_subgraphs, but not its other events.
		if observe != nil && (ns == "" || ev.Kind == graph.EventCustom) {
			observe(ev, out)
		}
	}
	end.values = g.valuesJSON(last)
	if len(end.interrupts) > 0 {
		end.values = withInterrupts(end.values, end.interrupts)
	}
	if outcome != nil && end.err == nil && len(end.interrupts) == 0 && ctx.Err() == nil {
		end.err = outcome(last)
	}
	return end
}

// ownCheckpoint is the described checkpoint of a run's own step, which
// record reads from the thread when it is the thread's newest.
type ownCheckpoint struct{ checkpointEvent }

// describeCheckpoint is the checkpoints event of a checkpoint the engine
// describes (graph.StepCheckpoint), as LangGraph's map_debug_checkpoint:
// a subgraph's config and its parent's name its namespace and, in
// checkpoint_map, the checkpoints of the runs above it, which its
// metadata lists as parents.
func describeCheckpoint(values json.RawMessage, sc *graph.StepCheckpoint) checkpointEvent {
	ref := sc.Ref
	parents := make(map[string]string, len(sc.Parents))
	for _, p := range sc.Parents {
		parents[p.Namespace] = p.Checkpoint
	}
	withMap := func(id string) checkpointRef {
		c := checkpointRef{ThreadID: ref.Thread, CheckpointNS: ref.Namespace, CheckpointID: id}
		if len(parents) > 0 {
			c.CheckpointMap = make(map[string]string, len(parents)+1)
			for k, v := range parents {
				c.CheckpointMap[k] = v
			}
			c.CheckpointMap[ref.Namespace] = id
		}
		return c
	}
	cp := checkpointEvent{Values: values, Next: []string{}, Tasks: []stateTask{}, Config: configOf(withMap(ref.Checkpoint)),
		Metadata: checkpointMeta{Source: string(sc.Source), Step: sc.Step - 1, RunID: sc.Run, Parents: parents}}
	if sc.Parent != "" {
		pc := configOf(withMap(sc.Parent))
		cp.ParentConfig = &pc
	}
	for _, t := range sc.Next {
		cp.Next = append(cp.Next, t.Node)
		cp.Tasks = append(cp.Tasks, stateTask{ID: t.ID, Name: t.Node, Interrupts: []interruptOut{}})
	}
	return cp
}

// isNull says whether a JSON value is absent or null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// pendingOf reads the pending tasks of the checkpoint at names (a thread's
// newest, or one of its checkpoints) and the
// interrupts raised by nodes that wait for an answer (breakpoints do not:
// a continuing run releases them). A thread without a checkpoint has none.
func pendingOf[S any](ctx context.Context, c *graph.Compiled[S], at graph.Ref) ([]string, []graph.PendingInterrupt, error) {
	snap, err := c.State(ctx, at)
	if errors.Is(err, graph.ErrCheckpointNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var waiting []graph.PendingInterrupt
	for _, pi := range snap.Interrupts {
		if pi.Kind == graph.InterruptNode {
			waiting = append(waiting, pi)
		}
	}
	return snap.Next, waiting, nil
}

func (g *served[S]) pending(ctx context.Context, thread string) ([]string, []graph.PendingInterrupt, error) {
	return pendingOf(ctx, g.c, graph.Thread(thread))
}

// errWaiting is the error of a run without input or command on a thread
// whose pending tasks wait for answers.
func errWaiting(waiting []graph.PendingInterrupt) error {
	ids := make([]string, 0, len(waiting))
	for _, pi := range waiting {
		ids = append(ids, pi.ID+" ("+pi.Node+")")
	}
	return fmt.Errorf("the thread waits on %d interrupt(s) for an answer: %s; send command.resume with the answer to continue it (input null continues only a thread whose pending tasks wait on no interrupt)",
		len(waiting), strings.Join(ids, ", "))
}

// commandOptions are the options of a resume with a command: answers to
// the pending interrupts (resume: one value, or a map of interrupt ids to
// values), an update and gotos.
func (g *served[S]) commandOptions(ctx context.Context, c *graph.Compiled[S], at graph.Ref, cmd *command) ([]graph.RunOption, error) {
	var opts []graph.RunOption
	if len(cmd.Resume) > 0 && string(cmd.Resume) != "null" {
		snap, err := c.State(ctx, at)
		if err != nil {
			return nil, fmt.Errorf("command.resume: reading the thread's interrupts: %w", err)
		}
		pending := snap.Interrupts
		if len(pending) == 0 {
			return nil, errors.New("command.resume: the thread waits on no interrupt; send input to start a run instead")
		}
		answers := map[string]json.RawMessage{}
		var byID map[string]json.RawMessage
		if json.Unmarshal(cmd.Resume, &byID) == nil && len(byID) > 0 && allIDs(byID, pending) {
			answers = byID
		} else {
			waiting := 0
			for _, pi := range pending {
				if pi.Kind == graph.InterruptNode {
					waiting++
					answers[pi.ID] = cmd.Resume
				}
			}
			if waiting > 1 {
				return nil, fmt.Errorf("command.resume: %d interrupts wait; send resume as an object of interrupt id to answer", waiting)
			}
		}
		for _, pi := range pending {
			raw, ok := answers[pi.ID]
			if !ok {
				continue
			}
			var ans any = raw
			if g.answer != nil {
				a, err := g.answer(pi, raw)
				if err != nil {
					return nil, fmt.Errorf("command.resume: %w", err)
				}
				ans = a
			}
			opts = append(opts, graph.AnswerFor(pi.ID, ans))
		}
	}
	var u graph.Update[S]
	if len(cmd.Update) > 0 && string(cmd.Update) != "null" {
		ws, err := c.DecodeWrites(cmd.Update)
		if err != nil {
			return nil, fmt.Errorf("command.update: %w", err)
		}
		u = graph.Writes(ws...)
	}
	if gotos := cmd.gotos(); len(gotos) > 0 {
		u = u.Goto(gotos...)
	}
	if !u.Empty() {
		opts = append(opts, graph.WithUpdate(u))
	}
	return opts, nil
}

func allIDs(m map[string]json.RawMessage, pending []graph.PendingInterrupt) bool {
	for id := range m {
		found := false
		for _, pi := range pending {
			found = found || pi.ID == id
		}
		if !found {
			return false
		}
	}
	return true
}

// withInterrupts adds __interrupt__ to a values object.
func withInterrupts(values json.RawMessage, intr []interruptOut) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(values, &obj) != nil || obj == nil {
		obj = map[string]json.RawMessage{}
	}
	obj["__interrupt__"], _ = json.Marshal(intr)
	out, _ := json.Marshal(obj)
	return out
}

// stateJSON is the state an event carries: the run's, or a subgraph's.
func (g *served[S]) stateJSON(ev graph.Event[S]) json.RawMessage {
	if ev.Untyped == nil {
		return g.valuesJSON(ev.State)
	}
	data, err := json.Marshal(ev.Untyped)
	if err != nil {
		data, _ = json.Marshal(map[string]string{"__error__": "the subgraph's state could not be encoded: " + err.Error()})
	}
	return data
}

// updateOf is the update an EventTaskEnd carries, as updateValues.
func updateOf[S any](ev graph.Event[S]) json.RawMessage {
	if ev.Untyped != nil {
		return updateValues(ev.Untyped)
	}
	return updateValues(ev.Update)
}

// updateValues is a node's update (a graph.Update of any state type) as
// {field: value}: a field's writes in the update, the last one when it
// wrote it several times.
func updateValues(u any) json.RawMessage {
	data, err := json.Marshal(u)
	if err != nil {
		return json.RawMessage("{}")
	}
	var enc struct {
		Writes []struct {
			Field string          `json:"field"`
			Value json.RawMessage `json:"value"`
		} `json:"writes"`
	}
	if json.Unmarshal(data, &enc) != nil {
		return json.RawMessage("{}")
	}
	obj := map[string]json.RawMessage{}
	for _, w := range enc.Writes {
		obj[w.Field] = w.Value
	}
	out, _ := json.Marshal(obj)
	return out
}

func argOf(arg any) json.RawMessage {
	if arg == nil {
		return json.RawMessage("{}")
	}
	data, err := json.Marshal(arg)
	if err != nil {
		return json.RawMessage("{}")
	}
	return data
}

func taskID(step, task int) string { return fmt.Sprintf("%d:%d", step, task) }

type taskStart struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Triggers []string        `json:"triggers"`
}

type taskEnd struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Result     json.RawMessage `json:"result"`
	Error      *string         `json:"error"`
	Interrupts []interruptOut  `json:"interrupts"`
}

func (g *served[S]) state(ctx context.Context, at graph.Ref) (threadState, error) {
	snap, err := g.c.State(ctx, at)
	if err != nil {
		return threadState{}, err
	}
	return g.stateOf(at.Thread, snap), nil
}

func (g *served[S]) history(ctx context.Context, at graph.Ref, limit int) ([]threadState, error) {
	snaps, err := g.c.History(ctx, at, limit)
	if err != nil {
		return nil, err
	}
	out := make([]threadState, 0, len(snaps))
	for _, s := range snaps {
		out = append(out, g.stateOf(at.Thread, s))
	}
	return out, nil
}

func (g *served[S]) values(ctx context.Context, thread string) (json.RawMessage, []interruptOut, error) {
	snap, err := g.c.State(ctx, graph.Thread(thread))
	if errors.Is(err, graph.ErrCheckpointNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return g.valuesJSON(snap.State), g.interruptsOut(snap.Interrupts), nil
}

func (g *served[S]) update(ctx context.Context, at graph.Ref, values json.RawMessage, asNode string) (string, error) {
	var u graph.Update[S]
	if len(values) > 0 && string(values) != "null" {
		ws, err := g.c.DecodeWrites(values)
		if err != nil {
			return "", fmt.Errorf("%w: values: %v", errBadRequest, err)
		}
		u = graph.Writes(ws...)
	}
	var opts []graph.UpdateOption
	if asNode != "" {
		opts = append(opts, graph.AsNode(asNode))
	}
	snap, err := g.c.UpdateState(ctx, at, u, opts...)
	if err != nil {
		return "", err
	}
	return snap.CheckpointID, nil
}

// stateOf is a snapshot as a ThreadState.
func (g *served[S]) stateOf(thread string, s graph.Snapshot[S]) threadState {
	ts := threadState{Values: g.valuesJSON(s.State), Next: s.Next, Tasks: []stateTask{},
		Checkpoint: checkpointRef{ThreadID: thread, CheckpointNS: s.Namespace, CheckpointID: s.CheckpointID},
		Metadata:   checkpointMeta{Source: string(s.Source), Step: s.Step - 1, RunID: s.Run, Parents: map[string]string{}},
		CreatedAt:  s.Created.UTC().Format(time.RFC3339Nano), Interrupts: g.interruptsOut(s.Interrupts)}
	if ts.Next == nil {
		ts.Next = []string{}
	}
	if s.Parent != "" {
		ts.ParentCheckpoint = &checkpointRef{ThreadID: thread, CheckpointNS: s.Namespace, CheckpointID: s.Parent}
	}
	for _, t := range s.Tasks {
		st := stateTask{ID: t.ID, Name: t.Node, Interrupts: g.interruptsOut(t.Waiting())}
		if t.Err != "" {
			e := t.Err
			st.Error = &e
		}
		if t.Done {
			st.Result = updateValues(t.Update)
		}
		if n := len(t.Subgraphs); n > 0 {
			// The task ran a subgraph: its checkpoints' namespace (the
			// last, when it ran several).
			st.Checkpoint = &checkpointRef{ThreadID: thread, CheckpointNS: t.Subgraphs[n-1]}
		}
		ts.Tasks = append(ts.Tasks, st)
	}
	return ts
}
