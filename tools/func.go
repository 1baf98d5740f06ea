package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// SchemaExtender is implemented by argument types that refine the schema
// Func infers for them: enums, bounds, defaults — what struct tags cannot
// say. ExtendSchema is called once, on the zero value, with the inferred
// schema of the type (an object schema whose Properties are keyed by JSON
// field name).
type SchemaExtender interface {
	ExtendSchema(s *jsonschema.Schema)
}

// FuncTool is a Tool made from a Go function taking a struct; see Func.
type FuncTool[A any] struct {
	name, description string
	schema            *jsonschema.Schema
	resolved          *jsonschema.Resolved
	fn                func(context.Context, A) (Result, error)
}

// Func makes a tool from fn. The parameters schema is inferred from A, which
// must be a struct type:
//   - property names come from the json tags;
//   - fields tagged omitempty or omitzero are optional, all others required;
//   - a `jsonschema:"…"` tag is the property's description;
//   - unknown properties are refused (additionalProperties: false);
//   - if A implements SchemaExtender, it refines the schema (enums, bounds).
//
// Run validates the model's arguments against the schema, then decodes them
// strictly into an A; arguments that do not fit become a failed Result the
// model sees ("invalid arguments for <name>: …"), and fn is not called.
// Empty arguments, and a JSON null, are read as {}; a null for an optional
// property is read as if the property were absent.
//
// Func returns an error when the name is invalid or A has no usable schema.
func Func[A any](name, description string, fn func(ctx context.Context, args A) (Result, error)) (*FuncTool[A], error) {
	return newFuncWithSchema(name, description, nil, fn)
}

// newFuncWithSchema is Func with a further schema refinement that depends on
// run-time options (bounds taken from a tool's configuration).
func newFuncWithSchema[A any](name, description string, extend func(*jsonschema.Schema), fn func(context.Context, A) (Result, error)) (*FuncTool[A], error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, fmt.Errorf("tools: Func %q: fn is nil", name)
	}
	if t := reflect.TypeFor[A](); t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("tools: Func %q: the argument type must be a struct (the arguments are a JSON object), got %s", name, t)
	}
	s, err := jsonschema.For[A](nil)
	if err != nil {
		return nil, fmt.Errorf("tools: Func %q: inferring the parameters schema: %w", name, err)
	}
	var zero A
	if x, ok := any(zero).(SchemaExtender); ok {
		x.ExtendSchema(s)
	} else if x, ok := any(&zero).(SchemaExtender); ok {
		x.ExtendSchema(s)
	}
	if extend != nil {
		extend(s)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("tools: Func %q: the parameters schema is invalid: %w", name, err)
	}
	return &FuncTool[A]{name: name, description: description, schema: s, resolved: resolved, fn: fn}, nil
}

// MustFunc is like Func but panics on error. Use it for tools declared at
// program start, where an error is a programming mistake.
func MustFunc[A any](name, description string, fn func(ctx context.Context, args A) (Result, error)) *FuncTool[A] {
	t, err := Func(name, description, fn)
	if err != nil {
		panic(err)
	}
	return t
}

// Name implements Tool.
func (t *FuncTool[A]) Name() string { return t.name }

// Description implements Tool.
func (t *FuncTool[A]) Description() string { return t.description }

// Parameters implements Tool. It returns a copy, so callers may adapt it for
// a provider without affecting the tool.
func (t *FuncTool[A]) Parameters() *jsonschema.Schema { return t.schema.CloneSchemas() }

// Run implements Tool: it decodes args (see Decode) and calls the function.
func (t *FuncTool[A]) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	a, err := t.Decode(args)
	if err != nil {
		return Failf("%v", err), nil
	}
	return t.fn(ctx, a)
}

// Decode validates args against the tool's schema and decodes them strictly
// (no unknown fields, no trailing data) into an A. The error names the tool
// and what is wrong, in words fit for the model.
func (t *FuncTool[A]) Decode(args json.RawMessage) (A, error) {
	var a A
	args = normalizeArgs(args)
	v, err := parseObject(args)
	if err != nil {
		return a, fmt.Errorf("invalid arguments for %s: %w", t.name, err)
	}
	if err := validate(t.resolved, v); err != nil {
		return a, fmt.Errorf("invalid arguments for %s: %w", t.name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("invalid arguments for %s: %w", t.name, err)
	}
	return a, nil
}

// normalizeArgs reads empty arguments and a JSON null as {}: models send
// either for tools without parameters.
func normalizeArgs(args json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return json.RawMessage("{}")
	}
	return trimmed
}

// parseObject checks that args is one well-formed JSON object and returns
// it in the generic form the validator takes.
func parseObject(args json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("arguments are not valid JSON: unexpected data after the arguments object")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("arguments must be a JSON object, got %s", jsonKind(v))
	}
	return v, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}

// validate checks v against the schema and makes the validator's message
// readable for a model: the nested "validating /properties/a/properties/b: "
// framing becomes `property "a.b": `.
//
// A null given for an optional top-level property counts as absent: models
// used to strict structured output send null for every argument they do
// not use.
func validate(rs *jsonschema.Resolved, v any) error {
	if m, ok := v.(map[string]any); ok {
		for k, val := range m {
			if val == nil && !slices.Contains(rs.Schema().Required, k) {
				delete(m, k)
			}
		}
	}
	err := rs.Validate(v)
	if err == nil {
		return nil
	}
	msg, path := err.Error(), ""
	for strings.HasPrefix(msg, "validating ") {
		rest := strings.TrimPrefix(msg, "validating ")
		i := strings.Index(rest, ": ")
		if i < 0 {
			break
		}
		if p := rest[:i]; p != "root" {
			path = p
		}
		msg = rest[i+2:]
	}
	if field := schemaPathToField(path); field != "" {
		return fmt.Errorf("property %q: %s", field, msg)
	}
	return errors.New(msg)
}

// schemaPathToField turns a schema location such as
// "/properties/steps/items" into "steps[]".
func schemaPathToField(path string) string {
	var b strings.Builder
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i < len(parts); i++ {
		switch parts[i] {
		case "":
		case "properties":
			if i+1 < len(parts) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(parts[i+1])
				i++
			}
		case "items", "prefixItems":
			b.WriteString("[]")
		}
	}
	return b.String()
}
