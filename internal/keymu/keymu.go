// Package keymu is a set of mutexes, one per key, made when a key is first
// locked and dropped when no one holds or waits for it: to order the
// writes of one record (a thread's, a run's) without making the writes of
// every other record wait behind them, as one mutex for all would.
//
//	var locks keymu.Map
//	unlock := locks.Lock(threadID)
//	defer unlock()
//	// read the record's newest state, then write it
package keymu

import "sync"

// Map holds a mutex per key. The zero value is ready to use; it must not be
// copied after first use.
type Map struct {
	mu    sync.Mutex
	locks map[string]*entry
}

type entry struct {
	mu    sync.Mutex
	users int // holding or waiting, under Map.mu
}

// Lock locks key's mutex, waiting while another holds it, and returns
// what unlocks it (call it once). Other keys are not affected.
func (m *Map) Lock(key string) (unlock func()) {
	m.mu.Lock()
	if m.locks == nil {
		m.locks = map[string]*entry{}
	}
	e := m.locks[key]
	if e == nil {
		e = &entry{}
		m.locks[key] = e
	}
	e.users++
	m.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		m.mu.Lock()
		if e.users--; e.users == 0 {
			delete(m.locks, key)
		}
		m.mu.Unlock()
	}
}

// Len is the number of keys held or waited for.
func (m *Map) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.locks)
}
