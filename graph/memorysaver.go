package graph

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MemorySaver is an in-memory Checkpointer, for tests and for runs that need
// resumption only within one process. Like the durable stores, it keeps a
// channel's value once per version, so a thread's memory grows with what
// its steps change, not with the size of its state times its steps.
type MemorySaver struct {
	mu      sync.Mutex
	threads map[string]*memThread
}

type memThread struct {
	cps    []*Checkpoint                // every namespace, in insertion order
	writes map[string]map[int]TaskWrite // by checkpoint id, then task
	blobs  map[blobKey]json.RawMessage  // channel values, by channel and version
	lease  Lease                        // Run "" when none
}

type blobKey struct{ channel, version string }

// NewMemorySaver returns an empty MemorySaver.
func NewMemorySaver() *MemorySaver { return &MemorySaver{threads: map[string]*memThread{}} }

// thread returns the thread's record, making it when make is set.
func (m *MemorySaver) thread(id string, make bool) *memThread {
	t := m.threads[id]
	if t == nil && make {
		t = &memThread{writes: map[string]map[int]TaskWrite{}, blobs: map[blobKey]json.RawMessage{}}
		m.threads[id] = t
	}
	return t
}

// live reports whether the lease is held and not expired.
func (l Lease) live(now time.Time) bool { return l.Run != "" && now.Before(l.Until) }

// busy returns the refusal of a write by run when another run holds a live
// lease of t.
func (t *memThread) busy(thread, run string) error {
	if t != nil && t.lease.live(time.Now()) && t.lease.Run != run {
		return &ThreadBusyError{Thread: thread, Run: t.lease.Run, Until: t.lease.Until}
	}
	return nil
}

// newest returns the newest checkpoint of namespace ns, nil when none.
func (t *memThread) newest(ns string) *Checkpoint {
	for i := len(t.cps) - 1; i >= 0; i-- {
		if t.cps[i].Namespace == ns {
			return t.cps[i]
		}
	}
	return nil
}

func (t *memThread) find(ns, id string) *Checkpoint {
	for _, cp := range t.cps {
		if cp.ID == id && cp.Namespace == ns {
			return cp
		}
	}
	return nil
}

// Put implements Checkpointer.
func (m *MemorySaver) Put(ctx context.Context, cp *Checkpoint) error {
	if cp == nil || cp.Thread == "" || cp.ID == "" {
		return fmt.Errorf("graph: MemorySaver.Put: checkpoint needs a thread and an id")
	}
	for _, w := range cp.Writes {
		if err := checkRecord(w); err != nil {
			return fmt.Errorf("graph: MemorySaver.Put: %w", err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.thread(cp.Thread, false)
	if err := t.busy(cp.Thread, cp.Run); err != nil {
		return err
	}
	newest := ""
	if t != nil {
		if slices.ContainsFunc(t.cps, func(x *Checkpoint) bool { return x.ID == cp.ID }) {
			return fmt.Errorf("graph: MemorySaver.Put: thread %q already has checkpoint %s", cp.Thread, cp.ID)
		}
		if n := t.newest(cp.Namespace); n != nil {
			newest = n.ID
		}
	}
	switch {
	case cp.Source == SourceFork && cp.Parent != "":
		if t == nil || t.find(cp.Namespace, cp.Parent) == nil {
			return fmt.Errorf("graph: MemorySaver.Put: fork of thread %q from checkpoint %s, which it does not have", cp.Thread, cp.Parent)
		}
	case cp.Parent != newest:
		return &ConflictingCheckpointError{Thread: cp.Thread, Parent: cp.Parent, Newest: newest}
	}
	for ch, v := range cp.Versions {
		if slices.ContainsFunc(cp.Values, func(cv ChannelValue) bool { return cv.Channel == ch && cv.Version == v }) {
			continue
		}
		if _, ok := t.blobOf(ch, v); !ok {
			return fmt.Errorf("graph: MemorySaver.Put: checkpoint %s of thread %q refers to version %s of channel %q, which is neither stored nor in its Values", cp.ID, cp.Thread, v, ch)
		}
	}
	t = m.thread(cp.Thread, true)
	for _, cv := range cp.Values {
		k := blobKey{cv.Channel, cv.Version}
		if _, ok := t.blobs[k]; !ok {
			t.blobs[k] = slices.Clone(cv.Value)
		}
	}
	c := cloneCheckpoint(cp)
	c.Values, c.Writes = nil, nil
	t.cps = append(t.cps, c)
	if len(cp.Writes) > 0 {
		byTask := map[int]TaskWrite{}
		for _, w := range cp.Writes {
			byTask[w.Task] = cloneWrite(w)
		}
		t.writes[cp.ID] = byTask
	}
	return nil
}

func (t *memThread) blobOf(channel, version string) (json.RawMessage, bool) {
	if t == nil {
		return nil, false
	}
	v, ok := t.blobs[blobKey{channel, version}]
	return v, ok
}

// checkRecord refuses a task record that cannot be read back.
func checkRecord(w TaskWrite) error {
	if w.Task < 0 || w.Node == "" {
		return fmt.Errorf("a task record needs a node and a task index ≥ 0 (got %q, %d)", w.Node, w.Task)
	}
	return nil
}

// PutWrites implements Checkpointer.
func (m *MemorySaver) PutWrites(ctx context.Context, at Ref, run string, writes ...TaskWrite) error {
	for _, w := range writes {
		if err := checkRecord(w); err != nil {
			return fmt.Errorf("graph: MemorySaver.PutWrites: %w", err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.thread(at.Thread, false)
	if err := t.busy(at.Thread, run); err != nil {
		return err
	}
	if t == nil || t.find(at.Namespace, at.Checkpoint) == nil {
		return fmt.Errorf("%w: MemorySaver.PutWrites: thread %q has no checkpoint %s for these task records (was the thread deleted?)", ErrCheckpointNotFound, at.Thread, at.String())
	}
	byTask := t.writes[at.Checkpoint]
	if byTask == nil {
		byTask = map[int]TaskWrite{}
		t.writes[at.Checkpoint] = byTask
	}
	for _, w := range writes {
		byTask[w.Task] = cloneWrite(w)
	}
	return nil
}

// full returns a copy of cp with its task records and channel values.
func (t *memThread) full(cp *Checkpoint) (*Checkpoint, error) {
	c := cloneCheckpoint(cp)
	for _, w := range t.writes[c.ID] {
		c.Writes = append(c.Writes, cloneWrite(w))
	}
	slices.SortFunc(c.Writes, func(a, b TaskWrite) int { return cmp.Compare(a.Task, b.Task) })
	for _, ch := range sortedKeys(c.Versions) {
		v, ok := t.blobOf(ch, c.Versions[ch])
		if !ok {
			return nil, fmt.Errorf("graph: MemorySaver: checkpoint %s of thread %q refers to version %s of channel %q, which is not stored", c.ID, c.Thread, c.Versions[ch], ch)
		}
		c.Values = append(c.Values, ChannelValue{Channel: ch, Version: c.Versions[ch], Value: slices.Clone(v)})
	}
	return c, nil
}

// Get implements Checkpointer.
func (m *MemorySaver) Get(ctx context.Context, at Ref) (*Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.thread(at.Thread, false)
	if t == nil {
		return nil, ErrCheckpointNotFound
	}
	var cp *Checkpoint
	if at.Checkpoint == "" {
		cp = t.newest(at.Namespace)
	} else {
		cp = t.find(at.Namespace, at.Checkpoint)
	}
	if cp == nil {
		return nil, ErrCheckpointNotFound
	}
	return t.full(cp)
}

// List implements Checkpointer.
func (m *MemorySaver) List(ctx context.Context, at Ref, limit int) ([]*Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.thread(at.Thread, false)
	if t == nil {
		if at.Checkpoint != "" {
			return nil, fmt.Errorf("%w: thread %q has no checkpoint %s", ErrCheckpointNotFound, at.Thread, at.Checkpoint)
		}
		return nil, nil
	}
	end := len(t.cps)
	if at.Checkpoint != "" {
		end = slices.IndexFunc(t.cps, func(cp *Checkpoint) bool { return cp.ID == at.Checkpoint && cp.Namespace == at.Namespace })
		if end < 0 {
			return nil, fmt.Errorf("%w: thread %q has no checkpoint %s", ErrCheckpointNotFound, at.Thread, at.Checkpoint)
		}
	}
	var out []*Checkpoint
	for i := end - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		if t.cps[i].Namespace != at.Namespace {
			continue
		}
		c, err := t.full(t.cps[i])
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// DeleteThread implements Checkpointer.
func (m *MemorySaver) DeleteThread(ctx context.Context, thread string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.thread(thread, false)
	if t != nil && t.lease.live(time.Now()) {
		return &ThreadBusyError{Thread: thread, Run: t.lease.Run, Until: t.lease.Until}
	}
	delete(m.threads, thread)
	return nil
}

// Prune implements Checkpointer.
func (m *MemorySaver) Prune(ctx context.Context, thread string, p Prune) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.thread(thread, false)
	if t == nil {
		return 0, nil
	}
	doomed := p.Selects(t.cps)
	if len(doomed) == 0 {
		return 0, nil
	}
	t.cps = slices.DeleteFunc(t.cps, func(cp *Checkpoint) bool { return doomed[cp.ID] })
	for id := range doomed {
		delete(t.writes, id)
	}
	used := map[blobKey]bool{}
	for _, cp := range t.cps {
		for ch, v := range cp.Versions {
			used[blobKey{ch, v}] = true
		}
	}
	for k := range t.blobs {
		if !used[k] {
			delete(t.blobs, k)
		}
	}
	return len(doomed), nil
}

// Selects returns the IDs of the checkpoints among cps — a thread's, in
// insertion order, every namespace; only ID, Namespace, Created and Run
// are read — that p selects: the rule every store applies in Prune.
func (p Prune) Selects(cps []*Checkpoint) map[string]bool {
	doomed := map[string]bool{}
	kept := map[string]int{} // per namespace, checkpoints kept so far from the newest
	for i := len(cps) - 1; i >= 0; i-- {
		cp := cps[i]
		if p.Run != "" && cp.Run == p.Run {
			doomed[cp.ID] = true
			continue
		}
		n := kept[cp.Namespace]
		kept[cp.Namespace]++
		if n == 0 {
			continue // the newest of its namespace
		}
		if p.KeepLast > 0 && n >= p.KeepLast || !p.Before.IsZero() && cp.Created.Before(p.Before) {
			doomed[cp.ID] = true
		}
	}
	return doomed
}

// TakeThread implements Checkpointer.
func (m *MemorySaver) TakeThread(ctx context.Context, thread, run string, ttl time.Duration) (Lease, error) {
	if thread == "" || run == "" {
		return Lease{}, fmt.Errorf("graph: MemorySaver.TakeThread: a lease needs a thread and a run")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.thread(thread, true)
	now := time.Now()
	if t.lease.live(now) && t.lease.Run != run {
		return Lease{}, &ThreadBusyError{Thread: thread, Run: t.lease.Run, Until: t.lease.Until}
	}
	stop := t.lease.Run == run && t.lease.Stop
	t.lease = Lease{Thread: thread, Run: run, Until: now.Add(ttl), Stop: stop}
	return t.lease, nil
}

// ReleaseThread implements Checkpointer.
func (m *MemorySaver) ReleaseThread(ctx context.Context, thread, run string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.thread(thread, false)
	if t == nil || t.lease.Run != run {
		return nil
	}
	t.lease = Lease{}
	if len(t.cps) == 0 {
		delete(m.threads, thread)
	}
	return nil
}

// StopThread implements Checkpointer.
func (m *MemorySaver) StopThread(ctx context.Context, thread string) (Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.thread(thread, false)
	if t == nil || !t.lease.live(time.Now()) {
		return Lease{}, nil
	}
	t.lease.Stop = true
	return t.lease, nil
}

// StoredBytes returns the bytes a thread takes in the saver: its
// checkpoints, task records and channel values, as JSON.
func (m *MemorySaver) StoredBytes(ctx context.Context, thread string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.thread(thread, false)
	if t == nil {
		return 0, nil
	}
	var n int64
	for _, cp := range t.cps {
		data, err := json.Marshal(cp)
		if err != nil {
			return 0, err
		}
		n += int64(len(data))
	}
	for _, byTask := range t.writes {
		for _, w := range byTask {
			data, err := json.Marshal(w)
			if err != nil {
				return 0, err
			}
			n += int64(len(data))
		}
	}
	for _, v := range t.blobs {
		n += int64(len(v))
	}
	return n, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func cloneCheckpoint(cp *Checkpoint) *Checkpoint {
	c := *cp
	c.State = slices.Clone(cp.State)
	if cp.Versions != nil {
		c.Versions = make(map[string]string, len(cp.Versions))
		for k, v := range cp.Versions {
			c.Versions[k] = v
		}
	}
	c.Values = nil
	for _, cv := range cp.Values {
		c.Values = append(c.Values, ChannelValue{Channel: cv.Channel, Version: cv.Version, Value: slices.Clone(cv.Value)})
	}
	c.Next = make([]PendingTask, len(cp.Next))
	for i, t := range cp.Next {
		c.Next[i] = PendingTask{ID: t.ID, Node: t.Node, Arg: slices.Clone(t.Arg)}
	}
	c.Joins = make([]JoinProgress, len(cp.Joins))
	for i, j := range cp.Joins {
		c.Joins[i] = JoinProgress{To: j.To, Seen: slices.Clone(j.Seen)}
	}
	c.Deferred = slices.Clone(cp.Deferred)
	c.Writes = nil
	for _, w := range cp.Writes {
		c.Writes = append(c.Writes, cloneWrite(w))
	}
	c.Ran = slices.Clone(cp.Ran)
	return &c
}

func cloneWrite(w TaskWrite) TaskWrite {
	w.Update = slices.Clone(w.Update)
	w.Interrupts = slices.Clone(w.Interrupts)
	for i := range w.Interrupts {
		w.Interrupts[i].Payload = slices.Clone(w.Interrupts[i].Payload)
	}
	w.Answers = slices.Clone(w.Answers)
	for i := range w.Answers {
		w.Answers[i].Value = slices.Clone(w.Answers[i].Value)
	}
	w.Subgraphs = slices.Clone(w.Subgraphs)
	return w
}
