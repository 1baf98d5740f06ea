package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deepgraph/deepgraph/schemas"
)

// TerminateStatus says how a task ended.
type TerminateStatus string

// The terminate statuses.
const (
	TerminateSuccess TerminateStatus = "success"
	TerminateFailure TerminateStatus = "failure"
)

// Termination is the terminate tool's arguments: how the task ended and the
// final answer.
type Termination struct {
	Status TerminateStatus `json:"status" jsonschema:"success if the task is done, failure if it cannot be done."`
	Answer string          `json:"answer" jsonschema:"The final answer for the user (Markdown). On failure: what was done and why the task cannot be completed."`
}

// ExtendSchema restricts status to success and failure (SchemaExtender).
func (Termination) ExtendSchema(s *jsonschema.Schema) {
	s.Properties["status"].Enum = []any{string(TerminateSuccess), string(TerminateFailure)}
}

// check is the rule the schema cannot say: success needs an answer.
func (t Termination) check() error {
	if t.Status == TerminateSuccess && strings.TrimSpace(t.Answer) == "" {
		return errors.New("status success needs the final answer in answer")
	}
	return nil
}

const terminateDescription = `Finish the task. Call it exactly once, alone, when the task is complete (status success, with the final answer for the user in answer) or cannot be completed (status failure, saying in answer what was done and what stands in the way). Nothing runs after it.`

// NewTerminate returns the terminate tool. Running it only acknowledges the
// call: the agent loop recognises the call (IsTerminate), reads status and
// answer (ParseTerminate) and stops.
func NewTerminate() Tool {
	return MustFunc(TerminateName, terminateDescription, func(_ context.Context, t Termination) (Result, error) {
		if err := t.check(); err != nil {
			return Failf("%v", err), nil
		}
		return Text(fmt.Sprintf("The task is finished (status: %s).", t.Status)), nil
	})
}

// IsTerminate reports whether call is a call of the terminate tool.
func IsTerminate(call schemas.ToolCall) bool { return call.Name == TerminateName }

// ParseTerminate reads a terminate call's arguments with the same
// validation the tool applies (status success or failure; success needs an
// answer). An agent that gets an error runs the call through its Collection
// anyway, so the model sees what to fix, and goes on.
func ParseTerminate(call schemas.ToolCall) (Termination, error) {
	if !IsTerminate(call) {
		return Termination{}, fmt.Errorf("tools: ParseTerminate: call of %q is not a %s call", call.Name, TerminateName)
	}
	t, err := MustFunc(TerminateName, terminateDescription, func(context.Context, Termination) (Result, error) {
		return Result{}, nil
	}).Decode(call.Arguments)
	if err != nil {
		return Termination{}, err
	}
	if err := t.check(); err != nil {
		return Termination{}, fmt.Errorf("invalid arguments for %s: %w", TerminateName, err)
	}
	return t, nil
}
