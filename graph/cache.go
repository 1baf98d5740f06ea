package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"
)

// Cache keeps the results of nodes that have a cache policy
// (WithCachePolicy), so that a node run again on an input it has seen
// returns its stored update without running (LangGraph's node cache). The
// values are the nodes' updates as JSON. Give one to Compile with
// WithCache; MemoryCache is the in-process one. A Cache may be shared by
// the runs of one graph; graphs that share one must not have nodes of the
// same name whose results differ, as the key is the node's name and the
// key of its input. Implementations must be safe for concurrent use.
type Cache interface {
	// Get returns the value stored under key; ok is false when there is
	// none or it has expired.
	Get(ctx context.Context, key CacheKey) (value []byte, ok bool, err error)
	// Set stores value under key for ttl; 0 keeps it until it is cleared.
	Set(ctx context.Context, key CacheKey, value []byte, ttl time.Duration) error
	// Clear deletes the entries of the named nodes, or every entry when no
	// node is named.
	Clear(ctx context.Context, nodes ...string) error
}

// CacheKey names one cached result.
type CacheKey struct {
	// Node is the node's path: its name, prefixed by its parent's path in
	// a subgraph ("outer/inner").
	Node string
	// Input is what the node's cache policy made of its input.
	Input string
}

// CachePolicy makes a node's results reusable (LangGraph's CachePolicy):
// when the node is about to run on an input whose key has a live entry in
// the graph's Cache, its stored update is used and the node does not run.
// In is the node's input: the graph's state type for AddNode, the payload
// type for AddTask. Only updates of tasks that finished are stored — not
// failures nor interrupts.
type CachePolicy[In any] struct {
	// Key makes the key of an input: inputs with one key share a result.
	// Nil keys each input by the SHA-256 of its JSON. An error fails the
	// task.
	Key func(In) (string, error)
	// TTL is how long a result is reused; 0 keeps it until the cache is
	// cleared (Compiled.ClearCache).
	TTL time.Duration
}

// WithCachePolicy caches the node's results by p in the graph's Cache
// (WithCache, which Compile then requires). A task reused from the cache
// has no EventTaskStart; its EventTaskEnd, and its record in the
// checkpointer (TaskState.Cached), say Cached. A run with a TaskRunner
// refuses a graph with a cache policy.
func WithCachePolicy[In any](p CachePolicy[In]) NodeOption {
	spec := &cacheSpec{in: reflect.TypeFor[In](), ttl: max(p.TTL, 0)}
	if p.Key != nil {
		spec.key = func(v any) (string, error) {
			in, ok := v.(In)
			if !ok && v != nil {
				return "", fmt.Errorf("the cache key takes %s, and the input is %T", spec.in, v)
			}
			return p.Key(in)
		}
	}
	return func(o *nodeOptions) { o.cache = spec }
}

// WithCache gives the graph the Cache its nodes' cache policies use
// (WithCachePolicy).
func WithCache(c Cache) Option { return func(s *settings) { s.cache = c } }

// cacheSpec is a node's cache policy, its input type erased.
type cacheSpec struct {
	in  reflect.Type
	key func(any) (string, error) // nil: hashKey
	ttl time.Duration
}

// inputKey is the key of a node's input.
func (c *cacheSpec) inputKey(input any) (string, error) {
	if c.key != nil {
		return c.key(input)
	}
	data, err := json.Marshal(input)
	if err != nil {
		return "", fmt.Errorf("the input cannot be encoded as JSON for its cache key (give the CachePolicy a Key): %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// CachedNodes returns the nodes that have a cache policy, in the order
// they were added.
func (c *Compiled[S]) CachedNodes() []string {
	var out []string
	for _, n := range c.nodes {
		if n.cache != nil {
			out = append(out, n.name)
		}
	}
	return out
}

// ClearCache deletes the cached results of the named nodes from the
// graph's Cache, or of every node when none is named. Nodes of subgraphs
// are named by their path ("outer/inner"), as CacheKey.Node.
func (c *Compiled[S]) ClearCache(ctx context.Context, nodes ...string) error {
	if c.set.cache == nil {
		return errors.New("graph: ClearCache: the graph has no cache (graph.WithCache)")
	}
	if err := c.set.cache.Clear(ctx, nodes...); err != nil {
		return fmt.Errorf("graph: clearing the node cache: %w", err)
	}
	return nil
}

// fromCache completes the step's tasks whose nodes have a cache policy and
// whose input has a cached result, before the others run: each gets the
// stored update, is recorded as cached and ends with a cached
// EventTaskEnd. The other cached nodes' tasks get their key, to store
// their result under when they finish.
func (r *run[S]) fromCache(ctx context.Context) error {
	cache := r.c.set.cache
	for i := range r.tasks {
		t := &r.tasks[i]
		n := t.node
		if n.cache == nil || !t.runnable() || t.hold != nil {
			continue // a task answering an interrupt runs with its answers
		}
		var input any = r.state
		if n.payload != nil {
			input = t.arg
		}
		key, err := n.cache.inputKey(input)
		if err != nil {
			return r.failCached(t, i, fmt.Errorf("making its cache key: %w", err))
		}
		t.cacheKey = &CacheKey{Node: t.info.path, Input: key}
		data, ok, err := cache.Get(ctx, *t.cacheKey)
		if err != nil {
			return r.failCached(t, i, fmt.Errorf("reading the node cache: %w", err))
		}
		if !ok {
			continue
		}
		u, err := r.c.decodeUpdate(data)
		if err != nil {
			continue // stored by another version of the graph: run the node, and replace it
		}
		t.upd, t.done, t.cached = u, true, true
		if r.cp != nil {
			r.record(t, TaskWrite{Update: data, Cached: true})
		}
		if r.emit != nil && r.wants(EventTaskEnd) && !r.emit(Event[S]{Kind: EventTaskEnd, Step: r.step, Node: n.name, Task: i, Update: t.upd, Err: t.err, Cached: true}) {
			r.stop = true
			return nil
		}
		if t.err != nil {
			return r.taskErr(t.err)
		}
	}
	return nil
}

// failCached fails task i for a reason of the cache's.
func (r *run[S]) failCached(t *task[S], i int, err error) error {
	t.done = true
	t.err = &NodeError{Node: r.prefix + t.node.name, Step: r.step, Err: err}
	if r.cp != nil {
		r.record(t, TaskWrite{Err: t.err.Error()})
	}
	if r.emit != nil && r.wants(EventTaskEnd) && !r.emit(Event[S]{Kind: EventTaskEnd, Step: r.step, Node: t.node.name, Task: i, Err: t.err}) {
		r.stop = true
	}
	return r.taskErr(t.err)
}

// toCache stores the update of a task that finished under its cache key.
func (r *run[S]) toCache(ctx context.Context, t *task[S], data []byte) error {
	if t.cacheKey == nil {
		return nil
	}
	if err := r.c.set.cache.Set(ctx, *t.cacheKey, data, t.node.cache.ttl); err != nil {
		return fmt.Errorf("storing its result in the node cache: %w", err)
	}
	return nil
}

// MemoryCache is a Cache in the process's memory. Expired entries are
// dropped as they are met, and all of them now and then, so entries with
// a TTL do not pile up; entries without one stay until cleared.
type MemoryCache struct {
	mu      sync.Mutex
	entries map[CacheKey]memoryEntry
	sets    int
	now     func() time.Time
}

type memoryEntry struct {
	value   []byte
	expires time.Time // zero: never
}

// NewMemoryCache returns an empty MemoryCache.
func NewMemoryCache() *MemoryCache {
	return &MemoryCache{entries: map[CacheKey]memoryEntry{}, now: time.Now}
}

// Get implements Cache.
func (m *MemoryCache) Get(_ context.Context, key CacheKey) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok {
		return nil, false, nil
	}
	if !e.expires.IsZero() && !m.now().Before(e.expires) {
		delete(m.entries, key)
		return nil, false, nil
	}
	return e.value, true, nil
}

// Set implements Cache. It keeps value as it is: the caller must not
// change it afterwards.
func (m *MemoryCache) Set(_ context.Context, key CacheKey, value []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	e := memoryEntry{value: value}
	if ttl > 0 {
		e.expires = now.Add(ttl)
	}
	m.entries[key] = e
	if m.sets++; m.sets%1024 == 0 {
		for k, e := range m.entries {
			if !e.expires.IsZero() && !now.Before(e.expires) {
				delete(m.entries, k)
			}
		}
	}
	return nil
}

// Clear implements Cache.
func (m *MemoryCache) Clear(_ context.Context, nodes ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(nodes) == 0 {
		clear(m.entries)
		return nil
	}
	for k := range m.entries {
		for _, n := range nodes {
			if k.Node == n {
				delete(m.entries, k)
				break
			}
		}
	}
	return nil
}

// Len returns how many entries the cache holds, expired ones included
// until they are dropped.
func (m *MemoryCache) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}
