package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Update is what a node returns: writes to fields of the state and, as a
// Command, where to go next. The zero Update writes nothing.
//
//	return graph.Writes(Queries.Add(q), Done.Set(false)), nil
//	return graph.Writes(Loops.Set(n)).Goto("summarise"), nil
//
// Writes are applied at the end of the step through each field's reducer, in
// task order; a node that writes a field twice has its writes applied in
// order. A field one task Sets takes only that task's writes in that step.
type Update[S any] struct {
	writes []Write[S]
	gotos  []string
	sends  []Send
}

// Writes makes an Update from writes built by field handles.
func Writes[S any](w ...Write[S]) Update[S] { return Update[S]{writes: w} }

// Goto adds nodes to run next (a Command): they run in the next step in
// addition to whatever the node's edges lead to. End is allowed. If the node
// was added with Destinations, each name must be one of them.
func (u Update[S]) Goto(nodes ...string) Update[S] {
	u.gotos = append(u.gotos[:len(u.gotos):len(u.gotos)], nodes...)
	return u
}

// Send adds Send tasks to run next (a Command).
func (u Update[S]) Send(sends ...Send) Update[S] {
	u.sends = append(u.sends[:len(u.sends):len(u.sends)], sends...)
	return u
}

// With returns u with more writes.
func (u Update[S]) With(w ...Write[S]) Update[S] {
	u.writes = append(u.writes[:len(u.writes):len(u.writes)], w...)
	return u
}

// Empty reports whether u neither writes nor routes.
func (u Update[S]) Empty() bool { return len(u.writes) == 0 && len(u.gotos) == 0 && len(u.sends) == 0 }

// Gotos returns the nodes u routes to.
func (u Update[S]) Gotos() []string { return u.gotos }

// Sends returns the Sends u routes to.
func (u Update[S]) Sends() []Send { return u.sends }

// Fields returns the JSON names of the fields u writes, in write order, with
// repeats.
func (u Update[S]) Fields() []string {
	out := make([]string, len(u.writes))
	for i, w := range u.writes {
		out[i] = w.field().key()
	}
	return out
}

// Send asks for one run of a task node with Arg as its input — the map step
// of map-reduce. Sends come from routers (in a Route), from fan-outs and from
// Commands. The task node must take Arg's type; see AddTask.
type Send struct {
	Node string
	Arg  any
}

// Route is a router's choice: nodes to run next on the state, and Sends.
// An empty Route ends this branch.
type Route struct {
	Nodes []string
	Sends []Send
}

// Goto routes to nodes (End allowed).
func Goto(nodes ...string) Route { return Route{Nodes: nodes} }

// Sends routes to Send tasks.
func Sends(sends ...Send) Route { return Route{Sends: sends} }

// Router picks the next nodes from the state after a step. Routers run on the
// engine's goroutine, after the step's updates are merged, once per step for
// each node that ran; they must be fast and must not block.
type Router[S any] func(s S) Route

// updateJSON is the stored form of an Update (checkpoints, streams).
type updateJSON struct {
	Writes []writeJSON `json:"writes,omitempty"`
	Goto   []string    `json:"goto,omitempty"`
	Sends  []sendJSON  `json:"sends,omitempty"`
}

type writeJSON struct {
	Field string          `json:"field"`
	Op    string          `json:"op"`
	Value json.RawMessage `json:"value"`
}

type sendJSON struct {
	Node string          `json:"node"`
	Arg  json.RawMessage `json:"arg"`
}

// MarshalJSON encodes u as {"writes":[{"field","op","value"}],"goto":[…],"sends":[…]}.
func (u Update[S]) MarshalJSON() ([]byte, error) {
	var out updateJSON
	out.Goto = u.gotos
	for _, w := range u.writes {
		v, err := json.Marshal(w.value())
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", w.field().key(), err)
		}
		out.Writes = append(out.Writes, writeJSON{Field: w.field().key(), Op: w.op().String(), Value: v})
	}
	for _, s := range u.sends {
		a, err := json.Marshal(s.Arg)
		if err != nil {
			return nil, fmt.Errorf("send to %s: %w", s.Node, err)
		}
		out.Sends = append(out.Sends, sendJSON{Node: s.Node, Arg: a})
	}
	return json.Marshal(out)
}

// decodeUpdate reads an Update written by MarshalJSON, decoding each value into
// its field's Go type and each Send's argument into its task's payload type.
func (c *Compiled[S]) decodeUpdate(data []byte) (Update[S], error) {
	var in updateJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Update[S]{}, err
	}
	u := Update[S]{gotos: in.Goto}
	for _, w := range in.Writes {
		f := c.fieldByKey(w.Field)
		if f == nil {
			return Update[S]{}, fmt.Errorf("unknown field %q (not declared in graph.New)", w.Field)
		}
		op, ok := parseOp(w.Op)
		if !ok {
			return Update[S]{}, fmt.Errorf("field %q: unknown write op %q", w.Field, w.Op)
		}
		wr, err := f.decode(op, w.Value)
		if err != nil {
			return Update[S]{}, fmt.Errorf("field %q: %w", w.Field, err)
		}
		u.writes = append(u.writes, wr)
	}
	for _, s := range in.Sends {
		arg, err := c.decodeArg(s.Node, s.Arg)
		if err != nil {
			return Update[S]{}, err
		}
		u.sends = append(u.sends, Send{Node: s.Node, Arg: arg})
	}
	return u, nil
}
