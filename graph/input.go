package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// DecodeWrites turns a JSON object of field values — keyed by the fields'
// JSON names, as a LangGraph client sends a run's input or a state update —
// into writes through the fields' reducers: a Value field is set, an Append
// field's list is appended, a Reduce field's value is merged. A key that is
// present writes its field even when its value is the zero value (false, 0,
// "", an empty list): presence is what says "set", as with InputWrites.
// Every key must be a declared field (graph.New); values are decoded into
// the fields' own Go types, never into arbitrary objects.
//
//	ws, err := run.DecodeWrites([]byte(`{"done": false, "notes": ["n"]}`))
//	out, err := run.Invoke(ctx, State{}, graph.Thread(id), graph.InputWrites(ws...))
func (c *Compiled[S]) DecodeWrites(data []byte) ([]Write[S], error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("graph: DecodeWrites takes a JSON object of field values, such as {\"field\": value}")
	}
	var out []Write[S]
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("graph: DecodeWrites: %w", err)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("graph: DecodeWrites: the value of %q: %w", key, err)
		}
		f := c.fieldByKey(key)
		if f == nil {
			return nil, fmt.Errorf("graph: DecodeWrites: %q is not a declared field of %s (declared: %s)", key, typeName[S](), strings.Join(c.fieldKeys(), ", "))
		}
		w, err := f.decode(f.inputOp(), raw)
		if err != nil {
			return nil, fmt.Errorf("graph: DecodeWrites: field %q: %w", key, err)
		}
		out = append(out, w)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("graph: DecodeWrites: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("graph: DecodeWrites: trailing data after the JSON object")
	}
	return out, nil
}

// fieldKeys are the JSON names of the declared fields, sorted.
func (c *Compiled[S]) fieldKeys() []string {
	keys := make([]string, len(c.fields))
	for i, f := range c.fields {
		keys[i] = f.key()
	}
	slices.Sort(keys)
	return keys
}

func typeName[S any]() string { return reflect.TypeFor[S]().String() }
