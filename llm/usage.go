package llm

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/deepgraph/deepgraph/schemas"
)

// Roles say what a model call is for. Usage is kept per role, so a run can
// report what each step of a graph cost. They are plain strings: use your
// own for your own steps.
const (
	RoleQuery      = "query"      // writing search queries
	RoleResearch   = "research"   // web research (grounded search and summary)
	RoleReflection = "reflection" // judging whether the research suffices
	RoleAnswer     = "answer"     // writing the final answer
	RoleAgent      = "agent"      // an agent's think/act steps
)

// Tally is the usage of a number of model calls.
type Tally struct {
	Calls  int   `json:"calls"`            // calls made, failed ones included
	Failed int   `json:"failed,omitempty"` // calls that returned an error
	Usage  Usage `json:"usage"`            // tokens, summed over the calls that reported them
}

// Add returns the sum of t and u.
func (t Tally) Add(u Tally) Tally {
	return Tally{Calls: t.Calls + u.Calls, Failed: t.Failed + u.Failed, Usage: t.Usage.Add(u.Usage)}
}

// UsageByRole is usage per role. Its methods never modify the receiver or
// their arguments: Merge is a graph state reducer as it stands,
//
//	Usage = graph.Reduce(func(s *State) *llm.UsageByRole { return &s.Usage }, llm.UsageByRole.Merge)
//
// and a node writes what its calls cost with Usage.Merge(meter.Snapshot()).
type UsageByRole map[string]Tally

// UsageFor is the usage of one call made for role that reported u.
func UsageFor(role string, u Usage) UsageByRole {
	return UsageByRole{role: {Calls: 1, Usage: u}}
}

// Merge returns a new map holding the sums of u and v per role.
func (u UsageByRole) Merge(v UsageByRole) UsageByRole {
	out := make(UsageByRole, max(len(u), len(v)))
	maps.Copy(out, u)
	for role, t := range v {
		out[role] = out[role].Add(t)
	}
	return out
}

// Add returns a new map with t added to role.
func (u UsageByRole) Add(role string, t Tally) UsageByRole {
	return u.Merge(UsageByRole{role: t})
}

// Total is the sum over all roles.
func (u UsageByRole) Total() Tally {
	var sum Tally
	for _, t := range u {
		sum = sum.Add(t)
	}
	return sum
}

// Roles returns the roles present, sorted, for stable reports.
func (u UsageByRole) Roles() []string {
	return slices.Sorted(maps.Keys(u))
}

// Meter accumulates usage per role across the calls of a run. It is safe
// for concurrent use, and its zero value is ready. Wrap models with Metered
// to feed it.
type Meter struct {
	mu sync.Mutex
	by UsageByRole
}

// Add records t under role.
func (m *Meter) Add(role string, t Tally) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.by == nil {
		m.by = UsageByRole{}
	}
	m.by[role] = m.by[role].Add(t)
}

// Snapshot returns a copy of the usage recorded so far.
func (m *Meter) Snapshot() UsageByRole {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.by)
}

// Total is the sum over all roles of the usage recorded so far.
func (m *Meter) Total() Tally { return m.Snapshot().Total() }

// Metered wraps m so that every call is recorded in meter under role: one
// call, whether it failed, and the Usage of its Response — or, when it
// failed, the tokens its APIError reported (a stream cut off after its
// first events is billed too). A nil meter
// returns m unchanged.
func Metered(m Model, meter *Meter, role string) Model {
	if meter == nil || m == nil {
		return m
	}
	return &metered{m: m, meter: meter, role: role}
}

type metered struct {
	m     Model
	meter *Meter
	role  string
}

func (mm *metered) Generate(ctx context.Context, msgs []schemas.Message, opts ...Option) (*Response, error) {
	resp, err := mm.m.Generate(ctx, msgs, opts...)
	t := Tally{Calls: 1}
	if err != nil {
		t.Failed = 1
	}
	t.Usage = callUsage(resp, err)
	mm.meter.Add(mm.role, t)
	return resp, err
}

// UsageError is the error of a failed step — a graph node's attempt, say —
// together with what its model calls spent before it failed: the calls,
// failed ones included, and the tokens they reported (a cut stream's, a
// successful call's before a later one broke). It unwraps to Err, so
// errors.Is and errors.As see through it. A UsageError wrapping another
// carries the sum of both: UsageOfError reads the outermost.
//
// The model-calling nodes of packages nodes and research fail with one, and
// also emit what they spent to the run's stream (nodes.FailedUsage), where
// the runs of those packages count it: a caller of Run must not add the
// error's usage to the result's again.
type UsageError struct {
	Err   error
	Usage UsageByRole
}

func (e *UsageError) Error() string { return e.Err.Error() }

func (e *UsageError) Unwrap() error { return e.Err }

// UsageOfError is what a failed step spent, from the first *UsageError in
// err's chain; nil when there is none.
func UsageOfError(err error) UsageByRole {
	var ue *UsageError
	if errors.As(err, &ue) {
		return ue.Usage
	}
	return nil
}
