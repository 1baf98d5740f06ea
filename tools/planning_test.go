package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func plan(t *testing.T, p *Planning, args map[string]any) Result {
	t.Helper()
	b, err := json.Marshal(args)
	require.NoError(t, err)
	res, err := p.Run(context.Background(), b)
	require.NoError(t, err)
	return res
}

func TestPlanningCommands(t *testing.T) {
	p, err := NewPlanning(PlanningOptions{})
	require.NoError(t, err)

	res := plan(t, p, map[string]any{"command": "list"})
	assert.Contains(t, res.Output, "There are no plans")
	res = plan(t, p, map[string]any{"command": "get"})
	assert.Contains(t, res.Error, "there is no active plan")

	res = plan(t, p, map[string]any{"command": "create", "title": "Research  Go\ngenerics", "steps": []string{"Find sources", "Read them", "Write the answer"}})
	require.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, "Created plan plan_1; it is now the active plan.")
	assert.Contains(t, res.Output, "Plan: Research Go generics (ID: plan_1)")
	assert.Contains(t, res.Output, "Progress: 0/3 steps completed (0%)")
	assert.Contains(t, res.Output, "0. [ ] Find sources\n1. [ ] Read them\n2. [ ] Write the answer\n")

	res = plan(t, p, map[string]any{"command": "mark_step", "step_index": 0, "step_status": "completed", "step_notes": "found 5"})
	require.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, "Step 0 of plan plan_1 is completed.")
	assert.Contains(t, res.Output, "0. [✓] Find sources\n   Notes: found 5\n")
	plan(t, p, map[string]any{"command": "mark_step", "step_index": 1, "step_status": "in_progress"})
	plan(t, p, map[string]any{"command": "mark_step", "plan_id": "plan_1", "step_index": 2, "step_status": "blocked"})
	res = plan(t, p, map[string]any{"command": "get", "plan_id": "plan_1"})
	require.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, "Progress: 1/3 steps completed (33%)")
	assert.Contains(t, res.Output, "Status: 1 completed, 1 in progress, 1 blocked, 0 not started")
	assert.Contains(t, res.Output, "1. [→] Read them\n2. [!] Write the answer\n")

	// Notes alone keep the status; status alone keeps the notes.
	plan(t, p, map[string]any{"command": "mark_step", "step_index": 1, "step_notes": "halfway"})
	pl, ok := p.Active()
	require.True(t, ok)
	assert.Equal(t, Step{Text: "Read them", Status: StepInProgress, Notes: "halfway"}, pl.Steps[1])

	// update keeps the state of unchanged steps, matched by text.
	res = plan(t, p, map[string]any{"command": "update", "steps": []string{"Plan the search", "Find sources", "Read them", "Write the answer"}})
	require.False(t, res.Failed(), res.Error)
	pl, _ = p.Active()
	assert.Equal(t, []StepStatus{StepNotStarted, StepCompleted, StepInProgress, StepBlocked},
		[]StepStatus{pl.Steps[0].Status, pl.Steps[1].Status, pl.Steps[2].Status, pl.Steps[3].Status})
	assert.Equal(t, "found 5", pl.Steps[1].Notes)
	res = plan(t, p, map[string]any{"command": "update", "title": "New title"})
	require.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, "Plan: New title (ID: plan_1)")

	res = plan(t, p, map[string]any{"command": "create", "plan_id": "side", "title": "Side quest", "steps": []string{"one"}})
	require.False(t, res.Failed(), res.Error)
	res = plan(t, p, map[string]any{"command": "list"})
	assert.Contains(t, res.Output, "• plan_1: New title — 1/4 steps completed\n• side (active): Side quest — 0/1 steps completed\n")
	res = plan(t, p, map[string]any{"command": "set_active", "plan_id": "plan_1"})
	require.False(t, res.Failed(), res.Error)
	pl, _ = p.Active()
	assert.Equal(t, "plan_1", pl.ID)

	res = plan(t, p, map[string]any{"command": "delete", "plan_id": "plan_1"})
	require.False(t, res.Failed(), res.Error)
	assert.Contains(t, res.Output, "There is no active plan now.")
	_, ok = p.Active()
	assert.False(t, ok)
	assert.Len(t, p.Plans(), 1)

	// A generated ID skips IDs already taken.
	plan(t, p, map[string]any{"command": "create", "plan_id": "plan_2", "title": "t", "steps": []string{"s"}})
	res = plan(t, p, map[string]any{"command": "create", "title": "t", "steps": []string{"s"}})
	assert.Contains(t, res.Output, "Created plan plan_3")
}

func TestPlanningErrors(t *testing.T) {
	p, err := NewPlanning(PlanningOptions{MaxPlans: 2, MaxSteps: 3})
	require.NoError(t, err)
	plan(t, p, map[string]any{"command": "create", "plan_id": "a", "title": "A", "steps": []string{"x", "y"}})
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"create without steps", map[string]any{"command": "create", "title": "T"}, "create needs title and steps"},
		{"create with empty steps", map[string]any{"command": "create", "title": "T", "steps": []string{}}, "at least one step"},
		{"create with blank step", map[string]any{"command": "create", "title": "T", "steps": []string{"ok", "  "}}, "step 1 is empty"},
		{"too many steps", map[string]any{"command": "create", "title": "T", "steps": []string{"1", "2", "3", "4"}}, "at most 3 steps"},
		{"duplicate id", map[string]any{"command": "create", "plan_id": "a", "title": "T", "steps": []string{"s"}}, `"a" already exists`},
		{"bad id", map[string]any{"command": "create", "plan_id": "a\nb", "title": "T", "steps": []string{"s"}}, "invalid plan ID"},
		{"long title", map[string]any{"command": "create", "title": strings.Repeat("t", 301), "steps": []string{"s"}}, "title is 301 characters long"},
		{"unknown plan", map[string]any{"command": "get", "plan_id": "zz"}, `no plan has ID "zz"; existing plans: "a"`},
		{"set_active without id", map[string]any{"command": "set_active"}, "set_active needs plan_id"},
		{"delete without id", map[string]any{"command": "delete"}, "delete needs plan_id"},
		{"mark without index", map[string]any{"command": "mark_step", "step_status": "completed"}, "mark_step needs step_index"},
		{"mark out of range", map[string]any{"command": "mark_step", "step_index": 2, "step_status": "completed"}, "step_index 2 is out of range: plan \"a\" has steps 0 to 1"},
		{"mark nothing", map[string]any{"command": "mark_step", "step_index": 0}, "needs step_status, step_notes or both"},
		{"bad status", map[string]any{"command": "mark_step", "step_index": 0, "step_status": "done"}, `property "step_status": enum`},
		{"bad command", map[string]any{"command": "archive"}, `property "command": enum`},
		{"update nothing", map[string]any{"command": "update"}, "update needs a title, steps or both"},
		{"long notes", map[string]any{"command": "mark_step", "step_index": 0, "step_notes": strings.Repeat("n", 2001)}, "step_notes is 2001 characters long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := plan(t, p, tt.args)
			require.True(t, res.Failed(), res.Output)
			assert.Contains(t, res.Error, tt.want)
		})
	}
	plan(t, p, map[string]any{"command": "create", "title": "B", "steps": []string{"s"}})
	res := plan(t, p, map[string]any{"command": "create", "title": "C", "steps": []string{"s"}})
	assert.Contains(t, res.Error, "already 2 plans, the maximum")
}

func TestPlanningTypedAPIAndState(t *testing.T) {
	p, err := NewPlanning(PlanningOptions{})
	require.NoError(t, err)
	pl, err := p.CreatePlan("", "Flow", []string{"a", "b"})
	require.NoError(t, err)
	assert.Equal(t, "plan_1", pl.ID)
	assert.Equal(t, 0, pl.Next())
	pl, err = p.MarkStep("", 0, StepCompleted, "")
	require.NoError(t, err)
	assert.Equal(t, 1, pl.Next())
	done, total := pl.Progress()
	assert.Equal(t, [2]int{1, 2}, [2]int{done, total})
	assert.Equal(t, StepCounts{NotStarted: 1, Completed: 1}, pl.Counts())
	_, err = p.MarkStep("nope", 0, StepCompleted, "")
	assert.ErrorIs(t, err, ErrPlanNotFound)
	_, err = p.MarkStep("", 0, "finished", "")
	assert.ErrorContains(t, err, "invalid step status")

	// Returned plans are copies.
	pl.Steps[0].Text = "mutated"
	got, ok := p.Plan("plan_1")
	require.True(t, ok)
	assert.Equal(t, "a", got.Steps[0].Text)

	st := p.State()
	b, err := json.Marshal(st)
	require.NoError(t, err)
	var back PlanningState
	require.NoError(t, json.Unmarshal(b, &back))
	restored, err := NewPlanning(PlanningOptions{State: &back})
	require.NoError(t, err)
	assert.Equal(t, st, restored.State())
	active, ok := restored.Active()
	require.True(t, ok)
	assert.Equal(t, StepCompleted, active.Steps[0].Status)
	pl, err = restored.CreatePlan("", "second", []string{"x"})
	require.NoError(t, err)
	assert.Equal(t, "plan_2", pl.ID, "generated IDs skip restored ones")

	_, err = NewPlanning(PlanningOptions{State: &PlanningState{Plans: []Plan{{ID: "a"}, {ID: "a"}}}})
	assert.ErrorContains(t, err, `plan "a" appears twice`)
	_, err = NewPlanning(PlanningOptions{State: &PlanningState{Plans: []Plan{{ID: "a"}}, Active: "b"}})
	assert.ErrorContains(t, err, `active plan "b"`)
	_, err = NewPlanning(PlanningOptions{State: &PlanningState{Plans: []Plan{{ID: "a", Steps: []Step{{Text: "s", Status: "weird"}}}}}})
	assert.ErrorContains(t, err, `invalid status "weird"`)
}

func TestPlanningConcurrent(t *testing.T) {
	p, err := NewPlanning(PlanningOptions{MaxSteps: 50})
	require.NoError(t, err)
	steps := make([]string, 40)
	for i := range steps {
		steps[i] = fmt.Sprintf("step %d", i)
	}
	_, err = p.CreatePlan("p", "t", steps)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range steps {
		wg.Go(func() {
			b, _ := json.Marshal(map[string]any{"command": "mark_step", "step_index": i, "step_status": "completed"})
			res, err := p.Run(context.Background(), b)
			assert.NoError(t, err)
			assert.False(t, res.Failed(), res.Error)
			_ = p.State()
		})
	}
	wg.Wait()
	pl, _ := p.Plan("p")
	done, total := pl.Progress()
	assert.Equal(t, total, done)
	assert.Equal(t, -1, pl.Next())
}

func TestStepStatusMarks(t *testing.T) {
	assert.Equal(t, "[✓]", StepCompleted.Mark())
	assert.Equal(t, "[→]", StepInProgress.Mark())
	assert.Equal(t, "[!]", StepBlocked.Mark())
	assert.Equal(t, "[ ]", StepNotStarted.Mark())
	assert.True(t, StepBlocked.Valid())
	assert.False(t, StepStatus("done").Valid())
}
