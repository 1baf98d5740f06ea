package runstore

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// memory is the in-memory Store.
type memory struct {
	mu   sync.Mutex
	runs map[string]*Run // normalized copies, never handed out
}

// NewMemory returns an empty Store that keeps its runs in memory, for
// tests.
func NewMemory() Store {
	return &memory{runs: make(map[string]*Run)}
}

func (m *memory) Create(_ context.Context, r *Run) error {
	if err := checkCreate(r); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.runs[r.ID]; ok {
		return exists(r.ID)
	}
	m.runs[r.ID] = normalized(r)
	return nil
}

func (m *memory) Update(_ context.Context, r *Run) error {
	if err := checkUpdate(r); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.runs[r.ID]
	if !ok {
		return notFound(r.ID)
	}
	n := normalized(r)
	n.Started, n.Kind, n.Thread = old.Started, old.Kind, old.Thread
	m.runs[r.ID] = n
	return nil
}

func (m *memory) Get(ctx context.Context, id string) (*Run, error) {
	return get(ctx, m, id)
}

func (m *memory) exact(_ context.Context, id string) (*Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return nil, notFound(id)
	}
	return normalized(r), nil
}

func (m *memory) withPrefix(_ context.Context, prefix string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id := range m.runs {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

func (m *memory) List(_ context.Context, opts ListOptions) ([]*Run, error) {
	runs := m.summaries(func(r *Run) bool {
		return (opts.Kind == "" || r.Kind == opts.Kind) && (opts.Thread == "" || r.Thread == opts.Thread)
	})
	if opts.Limit > 0 && len(runs) > opts.Limit {
		runs = runs[:opts.Limit]
	}
	return runs, nil
}

func (m *memory) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.runs[id]; !ok {
		return notFound(id)
	}
	delete(m.runs, id)
	return nil
}

func (m *memory) Prune(_ context.Context, before time.Time) ([]*Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	before, now := normalTime(before), time.Now()
	var pruned []*Run
	for id, r := range m.runs {
		if prunable(r, before, now) {
			pruned = append(pruned, summary(r))
			delete(m.runs, id)
		}
	}
	slices.SortFunc(pruned, newestFirst)
	return pruned, nil
}

func (m *memory) ThreadRuns(_ context.Context, thread string) ([]*Run, error) {
	runs := m.summaries(func(r *Run) bool { return r.Thread == thread })
	slices.Reverse(runs)
	return runs, nil
}

// summaries returns the runs keep accepts, newest first, without their
// documents.
func (m *memory) summaries(keep func(*Run) bool) []*Run {
	m.mu.Lock()
	defer m.mu.Unlock()
	var runs []*Run
	for _, r := range m.runs {
		if keep(r) {
			runs = append(runs, summary(r))
		}
	}
	slices.SortFunc(runs, newestFirst)
	return runs
}

// newestFirst orders runs as List returns them: by Started, newest first,
// then by ID, descending.
func newestFirst(a, b *Run) int {
	return cmp.Or(b.Started.Compare(a.Started), strings.Compare(b.ID, a.ID))
}
