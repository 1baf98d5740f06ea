package graph

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unsafe"
)

// Field is a handle on one field of the state struct S: *ValueField,
// *AppendField or *ReduceField.
//
// A field handle names one field of the state struct S, knows how updates to
// it are merged (its reducer) and builds typed writes to it. Declare handles
// once, next to the state type, and pass them all to New:
//
//	type State struct {
//		Question string
//		Queries  []string
//		Loops    int
//	}
//
//	var (
//		Question = graph.Value(func(s *State) *string { return &s.Question })
//		Queries  = graph.Append(func(s *State) *[]string { return &s.Queries })
//		Loops    = graph.Value(func(s *State) *int { return &s.Loops })
//	)
//
// The accessor function is how the engine reaches the field at run time: no
// reflection happens per step. The handle's name — the field's JSON name, as
// encoding/json would write it — is worked out once, when the handle is made,
// and is what checkpoints and error messages use.
//
// Three reducers exist:
//
//   - Value: the last write wins. Two tasks of one step setting the same
//     Value field is a *ConflictError naming both nodes.
//   - Append: a slice; Add appends, and the Adds of one step are applied in
//     task order.
//   - Reduce: a custom merge function combines the current value with each
//     Merge write, in task order.
//
// Every handle also has Set, which replaces the value outright (bypassing the
// reducer) — the way to reset a list at the start of a new round. A Set is
// exclusive: two Sets of one field in one step conflict, and the other
// tasks' Adds and Merges of the field in the Set's step are dropped
// (LangGraph's Overwrite), whatever the task order.
type Field[S any] interface {
	key() string    // JSON name
	goName() string // Go field name, for messages
	decode(op writeOp, data []byte) (Write[S], error)
	afterMerge(s *S)        // normalise after a step's writes (clip slices)
	mergeInput(dst, src *S) // apply a continuing run's input
	// freshInput turns s, a fresh run's input, into the state that writing
	// its non-zero field through the reducer onto the zero state gives.
	freshInput(s *S)
	reduces() bool // whether freshInput does anything (a Reduce field)
	// inputOp is the op of an input write: Set, Add or Merge, by reducer.
	inputOp() writeOp
	// channel reads and writes the field alone, as a checkpoint's channel.
	channel() channelIO[S]
}

// channelIO encodes, decodes and clears one field of S.
type channelIO[S any] struct {
	encode func(s *S) ([]byte, error)
	decode func(s *S, data []byte) error
	clear  func(s *S)
}

func fieldIO[S, T any](get func(*S) *T) channelIO[S] {
	return channelIO[S]{
		encode: func(s *S) ([]byte, error) { return json.Marshal(*get(s)) },
		decode: func(s *S, data []byte) error { return json.Unmarshal(data, get(s)) },
		clear: func(s *S) {
			var zero T
			*get(s) = zero
		},
	}
}

// fieldInfo is the identity shared by all field handles.
type fieldInfo struct {
	name  string // JSON name
	gname string // Go name
}

func (f *fieldInfo) key() string    { return f.name }
func (f *fieldInfo) goName() string { return f.gname }

// ValueField is a last-value field of S. Make one with Value.
type ValueField[S, T any] struct {
	fieldInfo
	get func(*S) *T
}

// Value declares a last-value field: each write replaces the value.
func Value[S, T any](get func(*S) *T) *ValueField[S, T] {
	return &ValueField[S, T]{fieldInfo: locate[S, T]("Value", get), get: get}
}

// Set writes v, replacing the current value (also when v is the zero value).
func (f *ValueField[S, T]) Set(v T) Write[S] { return setWrite[S, T]{f: f, get: f.get, v: v} }

// Written returns the value u writes to this field, and whether it writes one.
func (f *ValueField[S, T]) Written(u Update[S]) (T, bool) { return lastSet[S, T](u, f) }

func (f *ValueField[S, T]) decode(op writeOp, data []byte) (Write[S], error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return f.Set(v), nil
}

func (f *ValueField[S, T]) afterMerge(*S) {}

func (f *ValueField[S, T]) freshInput(*S)         {} // the last value is the value
func (f *ValueField[S, T]) reduces() bool         { return false }
func (f *ValueField[S, T]) inputOp() writeOp      { return opSet }
func (f *ValueField[S, T]) channel() channelIO[S] { return fieldIO(f.get) }

func (f *ValueField[S, T]) mergeInput(dst, src *S) {
	if v := *f.get(src); !isZero(v) {
		*f.get(dst) = v
	}
}

// AppendField is a list field of S. Make one with Append.
type AppendField[S, E any] struct {
	fieldInfo
	get func(*S) *[]E
}

// Append declares a list field: Add appends to it.
func Append[S, E any](get func(*S) *[]E) *AppendField[S, E] {
	return &AppendField[S, E]{fieldInfo: locate[S, []E]("Append", get), get: get}
}

// Add appends elems. Adds from several tasks of one step are applied in task
// order, whatever order the tasks finished in.
func (f *AppendField[S, E]) Add(elems ...E) Write[S] { return addWrite[S, E]{f: f, elems: elems} }

// Set replaces the whole list (nil empties it).
func (f *AppendField[S, E]) Set(v []E) Write[S] { return setWrite[S, []E]{f: f, get: f.get, v: v} }

// Written returns the elements u adds to this field (after any list it sets),
// and whether u writes to the field at all.
func (f *AppendField[S, E]) Written(u Update[S]) ([]E, bool) {
	var out []E
	found := false
	for _, w := range u.writes {
		if w.field() != Field[S](f) {
			continue
		}
		found = true
		switch w := w.(type) {
		case addWrite[S, E]:
			out = append(out, w.elems...)
		case setWrite[S, []E]:
			out = append(out[:0], w.v...)
		}
	}
	return out, found
}

func (f *AppendField[S, E]) decode(op writeOp, data []byte) (Write[S], error) {
	var v []E
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if op == opSet {
		return f.Set(v), nil
	}
	return f.Add(v...), nil
}

// afterMerge clips the list so that its capacity equals its length: whoever
// appends to a state's list next — a node working on its copy, or the next
// step's merge — gets a fresh array instead of writing into one that other
// snapshots share.
func (f *AppendField[S, E]) afterMerge(s *S) {
	p := f.get(s)
	*p = (*p)[:len(*p):len(*p)]
}

func (f *AppendField[S, E]) freshInput(*S)         {} // nothing + the list is the list
func (f *AppendField[S, E]) reduces() bool         { return false }
func (f *AppendField[S, E]) inputOp() writeOp      { return opAdd }
func (f *AppendField[S, E]) channel() channelIO[S] { return fieldIO(f.get) }

func (f *AppendField[S, E]) mergeInput(dst, src *S) {
	if v := *f.get(src); len(v) > 0 {
		p := f.get(dst)
		*p = append(*p, v...)
		f.afterMerge(dst)
	}
}

// ReduceField is a field of S merged by a custom function. Make one with Reduce.
type ReduceField[S, T any] struct {
	fieldInfo
	get   func(*S) *T
	merge func(cur, upd T) T
}

// Reduce declares a field whose writes are combined with merge(current,
// written). merge must not modify cur in place: state values are shared with
// stream consumers and earlier snapshots, so return a new value.
func Reduce[S, T any](get func(*S) *T, merge func(cur, upd T) T) *ReduceField[S, T] {
	if merge == nil {
		panic("graph.Reduce: merge function is nil")
	}
	return &ReduceField[S, T]{fieldInfo: locate[S, T]("Reduce", get), get: get, merge: merge}
}

// Merge combines v into the current value with the field's merge function.
func (f *ReduceField[S, T]) Merge(v T) Write[S] { return mergeWrite[S, T]{f: f, v: v} }

// Set replaces the value, bypassing the merge function.
func (f *ReduceField[S, T]) Set(v T) Write[S] { return setWrite[S, T]{f: f, get: f.get, v: v} }

// Written returns the value u merges or sets last, and whether it writes one.
func (f *ReduceField[S, T]) Written(u Update[S]) (T, bool) {
	var out T
	found := false
	for _, w := range u.writes {
		if w.field() != Field[S](f) {
			continue
		}
		switch w := w.(type) {
		case mergeWrite[S, T]:
			out, found = w.v, true
		case setWrite[S, T]:
			out, found = w.v, true
		}
	}
	return out, found
}

func (f *ReduceField[S, T]) decode(op writeOp, data []byte) (Write[S], error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	if op == opSet {
		return f.Set(v), nil
	}
	return f.Merge(v), nil
}

func (f *ReduceField[S, T]) afterMerge(*S) {}

func (f *ReduceField[S, T]) reduces() bool         { return true }
func (f *ReduceField[S, T]) inputOp() writeOp      { return opMerge }
func (f *ReduceField[S, T]) channel() channelIO[S] { return fieldIO(f.get) }

func (f *ReduceField[S, T]) freshInput(s *S) {
	if p := f.get(s); !isZero(*p) {
		var zero T
		*p = f.merge(zero, *p)
	}
}

func (f *ReduceField[S, T]) mergeInput(dst, src *S) {
	if v := *f.get(src); !isZero(v) {
		p := f.get(dst)
		*p = f.merge(*p, v)
	}
}

// Write is one typed write to one field, made by a field handle's Set, Add or
// Merge. Nodes return writes inside an Update.
type Write[S any] interface {
	field() Field[S]
	op() writeOp
	apply(s *S)
	value() any // for JSON encoding
}

type writeOp uint8

const (
	opSet writeOp = iota + 1
	opAdd
	opMerge
)

func (o writeOp) String() string {
	switch o {
	case opSet:
		return "set"
	case opAdd:
		return "add"
	case opMerge:
		return "merge"
	}
	return "unknown"
}

func parseOp(s string) (writeOp, bool) {
	switch s {
	case "set":
		return opSet, true
	case "add":
		return opAdd, true
	case "merge":
		return opMerge, true
	}
	return 0, false
}

type setWrite[S, T any] struct {
	f   Field[S]
	get func(*S) *T
	v   T
}

func (w setWrite[S, T]) field() Field[S] { return w.f }
func (w setWrite[S, T]) op() writeOp     { return opSet }
func (w setWrite[S, T]) apply(s *S)      { *w.get(s) = w.v }
func (w setWrite[S, T]) value() any      { return w.v }

type addWrite[S, E any] struct {
	f     *AppendField[S, E]
	elems []E
}

func (w addWrite[S, E]) field() Field[S] { return w.f }
func (w addWrite[S, E]) op() writeOp     { return opAdd }
func (w addWrite[S, E]) apply(s *S) {
	p := w.f.get(s)
	*p = append(*p, w.elems...)
}
func (w addWrite[S, E]) value() any { return w.elems }

type mergeWrite[S, T any] struct {
	f *ReduceField[S, T]
	v T
}

func (w mergeWrite[S, T]) field() Field[S] { return w.f }
func (w mergeWrite[S, T]) op() writeOp     { return opMerge }
func (w mergeWrite[S, T]) apply(s *S) {
	p := w.f.get(s)
	*p = w.f.merge(*p, w.v)
}
func (w mergeWrite[S, T]) value() any { return w.v }

func lastSet[S, T any](u Update[S], f Field[S]) (T, bool) {
	var out T
	found := false
	for _, w := range u.writes {
		if w.field() == f {
			if sw, ok := w.(setWrite[S, T]); ok {
				out, found = sw.v, true
			}
		}
	}
	return out, found
}

func isZero[T any](v T) bool { return reflect.ValueOf(&v).Elem().IsZero() }

// locate works out, once, which field of S the accessor returns: it calls get
// on a fresh S, turns the pointer into an offset and finds the struct field at
// that offset with type T. Handles are declared at package level, so a wrong
// accessor is a programming error reported like regexp.MustCompile's.
func locate[S, T any](ctor string, get func(*S) *T) (info fieldInfo) {
	st := reflect.TypeFor[S]()
	if st.Kind() != reflect.Struct {
		panic(fmt.Sprintf("graph.%s: the state type %s is not a struct", ctor, st))
	}
	if get == nil {
		panic(fmt.Sprintf("graph.%s: accessor is nil", ctor))
	}
	base := new(S)
	p := func() (p *T) {
		defer func() {
			if r := recover(); r != nil {
				panic(fmt.Sprintf("graph.%s: the accessor must return a pointer to a field of %s, like func(s *%s) *T { return &s.Field }; it panicked: %v", ctor, st, st.Name(), r))
			}
		}()
		return get(base)
	}()
	off := uintptr(unsafe.Pointer(p)) - uintptr(unsafe.Pointer(base))
	if p == nil || uintptr(unsafe.Pointer(p)) < uintptr(unsafe.Pointer(base)) || off >= st.Size() && st.Size() > 0 {
		panic(fmt.Sprintf("graph.%s: the accessor must return a pointer to a field of %s, like func(s *%s) *T { return &s.Field }", ctor, st, st.Name()))
	}
	want := reflect.TypeFor[T]()
	for i := range st.NumField() {
		f := st.Field(i)
		if f.Offset != off || f.Type != want {
			continue
		}
		if !f.IsExported() {
			panic(fmt.Sprintf("graph.%s: field %s of %s is not exported; checkpoints store state as JSON, so state fields must be exported", ctor, f.Name, st))
		}
		return fieldInfo{name: jsonName(f), gname: f.Name}
	}
	panic(fmt.Sprintf("graph.%s: the accessor must return a pointer to a top-level field of %s of type %s (nested fields are not supported: give the enclosing struct field a handle instead)", ctor, st, want))
}

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	if name, _, _ := strings.Cut(tag, ","); name != "" && name != "-" {
		return name
	}
	return f.Name
}
