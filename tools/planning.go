package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// StepStatus is the state of one plan step.
type StepStatus string

// The step statuses.
const (
	StepNotStarted StepStatus = "not_started"
	StepInProgress StepStatus = "in_progress"
	StepCompleted  StepStatus = "completed"
	StepBlocked    StepStatus = "blocked"
)

// Valid reports whether s is one of the four statuses.
func (s StepStatus) Valid() bool {
	switch s {
	case StepNotStarted, StepInProgress, StepCompleted, StepBlocked:
		return true
	}
	return false
}

// Mark is the status's mark in plan text: [✓] completed, [→] in progress,
// [!] blocked, [ ] not started.
func (s StepStatus) Mark() string {
	switch s {
	case StepCompleted:
		return "[✓]"
	case StepInProgress:
		return "[→]"
	case StepBlocked:
		return "[!]"
	default:
		return "[ ]"
	}
}

// Step is one step of a plan.
type Step struct {
	Text   string     `json:"text"`
	Status StepStatus `json:"status"`
	Notes  string     `json:"notes,omitempty"`
}

// Plan is a titled list of steps.
type Plan struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Steps []Step `json:"steps"`
}

// StepCounts counts a plan's steps by status.
type StepCounts struct {
	NotStarted, InProgress, Completed, Blocked int
}

// Counts returns how many steps have each status.
func (p Plan) Counts() StepCounts {
	var c StepCounts
	for _, s := range p.Steps {
		switch s.Status {
		case StepInProgress:
			c.InProgress++
		case StepCompleted:
			c.Completed++
		case StepBlocked:
			c.Blocked++
		default:
			c.NotStarted++
		}
	}
	return c
}

// Progress returns the number of completed steps and the number of steps.
func (p Plan) Progress() (completed, total int) {
	for _, s := range p.Steps {
		if s.Status == StepCompleted {
			completed++
		}
	}
	return completed, len(p.Steps)
}

// Next returns the index of the first step that is not started or in
// progress, or -1 when there is none (all completed or blocked).
func (p Plan) Next() int {
	for i, s := range p.Steps {
		if s.Status == StepNotStarted || s.Status == StepInProgress {
			return i
		}
	}
	return -1
}

// String renders the plan as the planning tool shows it:
//
//	Plan: Research X (ID: plan_1)
//	Progress: 1/3 steps completed (33%)
//	Status: 1 completed, 1 in progress, 0 blocked, 1 not started
//
//	Steps:
//	0. [✓] Find sources
//	   Notes: found five
//	1. [→] Read them
//	2. [ ] Write the answer
func (p Plan) String() string {
	var b strings.Builder
	done, total := p.Progress()
	pct := 0
	if total > 0 {
		pct = done * 100 / total
	}
	c := p.Counts()
	fmt.Fprintf(&b, "Plan: %s (ID: %s)\n", p.Title, p.ID)
	fmt.Fprintf(&b, "Progress: %d/%d steps completed (%d%%)\n", done, total, pct)
	fmt.Fprintf(&b, "Status: %d completed, %d in progress, %d blocked, %d not started\n\nSteps:\n",
		c.Completed, c.InProgress, c.Blocked, c.NotStarted)
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "%d. %s %s\n", i, s.Status.Mark(), s.Text)
		if s.Notes != "" {
			fmt.Fprintf(&b, "   Notes: %s\n", strings.ReplaceAll(s.Notes, "\n", "\n   "))
		}
	}
	return b.String()
}

func (p Plan) clone() Plan {
	p.Steps = slices.Clone(p.Steps)
	return p
}

// PlanningState is the planning tool's whole state, for persisting it with a
// run and restoring it (PlanningOptions.State).
type PlanningState struct {
	Plans  []Plan `json:"plans"`  // in creation order
	Active string `json:"active"` // the active plan's ID, "" for none
}

// PlanningOptions configure the planning tool. Zero values take the
// defaults named on each field.
type PlanningOptions struct {
	// MaxPlans caps the number of plans (default 20).
	MaxPlans int
	// MaxSteps caps the steps of one plan (default 50).
	MaxSteps int
	// State restores a saved state (Planning.State); nil starts empty.
	State *PlanningState
}

// Planning limits on text lengths, in characters.
const (
	maxPlanIDChars  = 64
	maxTitleChars   = 300
	maxStepChars    = 1000
	maxNoteChars    = 2000
	defaultMaxPlans = 20
	defaultMaxSteps = 50
)

// ErrPlanNotFound: no plan has the given ID (or there is no active plan).
var ErrPlanNotFound = errors.New("tools: plan not found")

type planningArgs struct {
	Command    string   `json:"command" jsonschema:"create, update, list, get, set_active, mark_step or delete."`
	PlanID     string   `json:"plan_id,omitempty" jsonschema:"The plan's ID. Optional for create (one is generated), update, get and mark_step (the active plan is used); required for set_active and delete."`
	Title      string   `json:"title,omitempty" jsonschema:"create (required), update: the plan's title."`
	Steps      []string `json:"steps,omitempty" jsonschema:"create (required), update: the steps, in order. On update, steps whose text is unchanged keep their status and notes."`
	StepIndex  *int     `json:"step_index,omitempty" jsonschema:"mark_step: the 0-based index of the step."`
	StepStatus string   `json:"step_status,omitempty" jsonschema:"mark_step: the step's new status."`
	StepNotes  *string  `json:"step_notes,omitempty" jsonschema:"mark_step: notes on the step (results, blockers); replaces earlier notes."`
}

func (planningArgs) ExtendSchema(s *jsonschema.Schema) {
	s.Properties["command"].Enum = []any{"create", "update", "list", "get", "set_active", "mark_step", "delete"}
	s.Properties["step_status"].Enum = []any{string(StepNotStarted), string(StepInProgress), string(StepCompleted), string(StepBlocked)}
	s.Properties["step_index"].Minimum = jsonschema.Ptr(0.0)
}

// Planning is the planning tool: the model keeps plans of steps with
// statuses and notes. State is held per instance and is safe for concurrent
// use; the typed methods (Plans, Plan, Active, CreatePlan, MarkStep, State)
// let a planning flow read and drive plans without parsing text.
type Planning struct {
	tool *FuncTool[planningArgs]
	opts PlanningOptions

	mu     sync.Mutex
	plans  []Plan
	active string
	nextID int
}

// NewPlanning returns a planning tool.
func NewPlanning(opts PlanningOptions) (*Planning, error) {
	if opts.MaxPlans <= 0 {
		opts.MaxPlans = defaultMaxPlans
	}
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = defaultMaxSteps
	}
	p := &Planning{opts: opts, nextID: 1}
	if st := opts.State; st != nil {
		seen := map[string]bool{}
		for _, pl := range st.Plans {
			if err := checkPlanID(pl.ID); err != nil {
				return nil, fmt.Errorf("tools: NewPlanning: restoring state: %w", err)
			}
			if seen[pl.ID] {
				return nil, fmt.Errorf("tools: NewPlanning: restoring state: plan %q appears twice", pl.ID)
			}
			seen[pl.ID] = true
			for i, s := range pl.Steps {
				if !s.Status.Valid() {
					return nil, fmt.Errorf("tools: NewPlanning: restoring state: plan %q step %d has invalid status %q", pl.ID, i, s.Status)
				}
			}
			p.plans = append(p.plans, pl.clone())
		}
		if st.Active != "" && !seen[st.Active] {
			return nil, fmt.Errorf("tools: NewPlanning: restoring state: active plan %q is not among the plans", st.Active)
		}
		p.active = st.Active
	}
	var err error
	p.tool, err = Func(PlanningName,
		`Keep a plan for the task: a titled list of steps, each not_started, in_progress, completed or blocked, with optional notes. Commands: create (title, steps; the new plan becomes active), update (title and/or steps), list, get, set_active, mark_step (step_index with step_status and/or step_notes), delete. Mark a step in_progress when you start it and completed when it is done; mark it blocked with a note when you cannot go on.`,
		p.run)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Name implements Tool.
func (p *Planning) Name() string { return p.tool.Name() }

// Description implements Tool.
func (p *Planning) Description() string { return p.tool.Description() }

// Parameters implements Tool.
func (p *Planning) Parameters() *jsonschema.Schema { return p.tool.Parameters() }

// Run implements Tool.
func (p *Planning) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	return p.tool.Run(ctx, args)
}

// Plans returns copies of all plans, in creation order.
func (p *Planning) Plans() []Plan {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Plan, len(p.plans))
	for i, pl := range p.plans {
		out[i] = pl.clone()
	}
	return out
}

// Plan returns a copy of the plan with the given ID.
func (p *Planning) Plan(id string) (Plan, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.find(id)
	if i < 0 {
		return Plan{}, false
	}
	return p.plans[i].clone(), true
}

// Active returns a copy of the active plan.
func (p *Planning) Active() (Plan, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.find(p.active)
	if i < 0 {
		return Plan{}, false
	}
	return p.plans[i].clone(), true
}

// State returns a copy of the whole state, for persisting.
func (p *Planning) State() PlanningState {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := PlanningState{Plans: make([]Plan, len(p.plans)), Active: p.active}
	for i, pl := range p.plans {
		st.Plans[i] = pl.clone()
	}
	return st
}

// CreatePlan adds a plan and makes it active. An empty id gets a generated
// one ("plan_1", …).
func (p *Planning) CreatePlan(id, title string, steps []string) (Plan, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.create(id, title, steps)
}

// MarkStep sets the status and notes of step index (0-based) of plan id
// ("" means the active plan). An empty status or notes leaves that part
// unchanged.
func (p *Planning) MarkStep(id string, index int, status StepStatus, notes string) (Plan, error) {
	var np *string
	if notes != "" {
		np = &notes
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mark(id, index, status, np)
}

func (p *Planning) find(id string) int {
	if id == "" {
		return -1
	}
	return slices.IndexFunc(p.plans, func(pl Plan) bool { return pl.ID == id })
}

// resolve finds plan id, or the active plan when id is "".
func (p *Planning) resolve(id string) (int, error) {
	if id == "" {
		if p.active == "" {
			return -1, fmt.Errorf("%w: there is no active plan; give plan_id or create a plan", ErrPlanNotFound)
		}
		id = p.active
	}
	i := p.find(id)
	if i < 0 {
		return -1, fmt.Errorf("%w: no plan has ID %q; %s", ErrPlanNotFound, id, p.known())
	}
	return i, nil
}

func (p *Planning) known() string {
	if len(p.plans) == 0 {
		return "there are no plans"
	}
	ids := make([]string, len(p.plans))
	for i, pl := range p.plans {
		ids[i] = strconv.Quote(pl.ID)
	}
	return "existing plans: " + strings.Join(ids, ", ")
}

func checkPlanID(id string) error {
	if id == "" || utf8.RuneCountInString(id) > maxPlanIDChars || strings.ContainsFunc(id, isUnwantedControl) || strings.ContainsAny(id, "\n\t") {
		return fmt.Errorf("invalid plan ID %q: use 1 to %d characters on one line", id, maxPlanIDChars)
	}
	return nil
}

func checkText(what, s string, maxChars int) (string, error) {
	s = strings.TrimSpace(cleanText(s))
	if s == "" {
		return "", fmt.Errorf("%s is empty", what)
	}
	if n := utf8.RuneCountInString(s); n > maxChars {
		return "", fmt.Errorf("%s is %d characters long; keep it under %d", what, n, maxChars)
	}
	return s, nil
}

func (p *Planning) checkSteps(steps []string) ([]string, error) {
	if len(steps) == 0 {
		return nil, errors.New("a plan needs at least one step")
	}
	if len(steps) > p.opts.MaxSteps {
		return nil, fmt.Errorf("a plan has at most %d steps; %d given", p.opts.MaxSteps, len(steps))
	}
	out := make([]string, len(steps))
	for i, s := range steps {
		var err error
		if out[i], err = checkText(fmt.Sprintf("step %d", i), oneLine(s), maxStepChars); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (p *Planning) create(id, title string, steps []string) (Plan, error) {
	if id == "" {
		for p.find("plan_"+strconv.Itoa(p.nextID)) >= 0 {
			p.nextID++
		}
		id = "plan_" + strconv.Itoa(p.nextID)
		p.nextID++
	}
	if err := checkPlanID(id); err != nil {
		return Plan{}, err
	}
	if p.find(id) >= 0 {
		return Plan{}, fmt.Errorf("a plan with ID %q already exists; use update to change it or choose another ID", id)
	}
	if len(p.plans) >= p.opts.MaxPlans {
		return Plan{}, fmt.Errorf("there are already %d plans, the maximum; delete one first", p.opts.MaxPlans)
	}
	title, err := checkText("title", oneLine(title), maxTitleChars)
	if err != nil {
		return Plan{}, err
	}
	texts, err := p.checkSteps(steps)
	if err != nil {
		return Plan{}, err
	}
	pl := Plan{ID: id, Title: title, Steps: make([]Step, len(texts))}
	for i, t := range texts {
		pl.Steps[i] = Step{Text: t, Status: StepNotStarted}
	}
	p.plans = append(p.plans, pl)
	p.active = id
	return pl.clone(), nil
}

func (p *Planning) update(id, title string, steps []string) (Plan, error) {
	i, err := p.resolve(id)
	if err != nil {
		return Plan{}, err
	}
	if title == "" && steps == nil {
		return Plan{}, errors.New("update needs a title, steps or both")
	}
	pl := p.plans[i].clone()
	if title != "" {
		if pl.Title, err = checkText("title", oneLine(title), maxTitleChars); err != nil {
			return Plan{}, err
		}
	}
	if steps != nil {
		texts, err := p.checkSteps(steps)
		if err != nil {
			return Plan{}, err
		}
		// Steps whose text is unchanged keep their status and notes, matched
		// by text so that inserting or removing steps keeps the others.
		old := slices.Clone(pl.Steps)
		used := make([]bool, len(old))
		pl.Steps = make([]Step, len(texts))
		for j, t := range texts {
			pl.Steps[j] = Step{Text: t, Status: StepNotStarted}
			for k, o := range old {
				if !used[k] && o.Text == t {
					pl.Steps[j], used[k] = o, true
					break
				}
			}
		}
	}
	p.plans[i] = pl
	return pl.clone(), nil
}

func (p *Planning) mark(id string, index int, status StepStatus, notes *string) (Plan, error) {
	i, err := p.resolve(id)
	if err != nil {
		return Plan{}, err
	}
	pl := p.plans[i]
	if index < 0 || index >= len(pl.Steps) {
		return Plan{}, fmt.Errorf("step_index %d is out of range: plan %q has steps 0 to %d", index, pl.ID, len(pl.Steps)-1)
	}
	if status == "" && notes == nil {
		return Plan{}, errors.New("mark_step needs step_status, step_notes or both")
	}
	if status != "" && !status.Valid() {
		return Plan{}, fmt.Errorf("invalid step status %q: use not_started, in_progress, completed or blocked", status)
	}
	step := pl.Steps[index]
	if status != "" {
		step.Status = status
	}
	if notes != nil {
		n := strings.TrimSpace(cleanText(*notes))
		if c := utf8.RuneCountInString(n); c > maxNoteChars {
			return Plan{}, fmt.Errorf("step_notes is %d characters long; keep it under %d", c, maxNoteChars)
		}
		step.Notes = n
	}
	pl.Steps = slices.Clone(pl.Steps)
	pl.Steps[index] = step
	p.plans[i] = pl
	return pl.clone(), nil
}

func (p *Planning) run(_ context.Context, a planningArgs) (Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fail := func(err error) (Result, error) { return Failf("%v", err), nil }
	switch a.Command {
	case "create":
		if a.Title == "" || a.Steps == nil {
			return Failf("create needs title and steps"), nil
		}
		pl, err := p.create(a.PlanID, a.Title, a.Steps)
		if err != nil {
			return fail(err)
		}
		return Text(fmt.Sprintf("Created plan %s; it is now the active plan.\n\n%s", pl.ID, pl)), nil
	case "update":
		pl, err := p.update(a.PlanID, a.Title, a.Steps)
		if err != nil {
			return fail(err)
		}
		return Text(fmt.Sprintf("Updated plan %s.\n\n%s", pl.ID, pl)), nil
	case "list":
		if len(p.plans) == 0 {
			return Text("There are no plans. Create one with the create command."), nil
		}
		var b strings.Builder
		b.WriteString("Plans:\n")
		for _, pl := range p.plans {
			done, total := pl.Progress()
			active := ""
			if pl.ID == p.active {
				active = " (active)"
			}
			fmt.Fprintf(&b, "• %s%s: %s — %d/%d steps completed\n", pl.ID, active, pl.Title, done, total)
		}
		return Text(b.String()), nil
	case "get":
		i, err := p.resolve(a.PlanID)
		if err != nil {
			return fail(err)
		}
		return Text(p.plans[i].String()), nil
	case "set_active":
		if a.PlanID == "" {
			return Failf("set_active needs plan_id; %s", p.known()), nil
		}
		i, err := p.resolve(a.PlanID)
		if err != nil {
			return fail(err)
		}
		p.active = p.plans[i].ID
		return Text(fmt.Sprintf("Plan %s is now the active plan.\n\n%s", p.active, p.plans[i])), nil
	case "mark_step":
		if a.StepIndex == nil {
			return Failf("mark_step needs step_index (0-based)"), nil
		}
		pl, err := p.mark(a.PlanID, *a.StepIndex, StepStatus(a.StepStatus), a.StepNotes)
		if err != nil {
			return fail(err)
		}
		return Text(fmt.Sprintf("Step %d of plan %s is %s.\n\n%s", *a.StepIndex, pl.ID, pl.Steps[*a.StepIndex].Status, pl)), nil
	case "delete":
		if a.PlanID == "" {
			return Failf("delete needs plan_id; %s", p.known()), nil
		}
		i, err := p.resolve(a.PlanID)
		if err != nil {
			return fail(err)
		}
		p.plans = slices.Delete(p.plans, i, i+1)
		msg := fmt.Sprintf("Deleted plan %s.", a.PlanID)
		if p.active == a.PlanID {
			p.active = ""
			msg += " There is no active plan now."
		}
		return Text(msg), nil
	default: // the schema's enum makes this unreachable through Run
		return Failf("unknown command %q", a.Command), nil
	}
}
