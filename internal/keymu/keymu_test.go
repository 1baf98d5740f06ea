package keymu_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/deepgraph/deepgraph/internal/keymu"
)

// One key's holders run one at a time; another key's holder does not wait
// for them; the map forgets keys no one holds.
func TestMap(t *testing.T) {
	var m keymu.Map
	unlockA := m.Lock("a")
	// "b" is free while "a" is held.
	unlockB := m.Lock("b")
	unlockB()

	got, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		unlock := m.Lock("a")
		close(got)
		unlock()
	}()
	select {
	case <-got:
		t.Fatal("a second holder of a got it while the first held it")
	default:
	}
	unlockA()
	<-got
	<-done
	assert.Zero(t, m.Len())
}

// Many holders of few keys: each key's counter is only ever touched by one
// at a time (the race detector sees it otherwise).
func TestMapExclusive(t *testing.T) {
	var m keymu.Map
	counts := map[string]*int{}
	for k := range 4 {
		counts[fmt.Sprint(k)] = new(int)
	}
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			k := fmt.Sprint(i % 4)
			unlock := m.Lock(k)
			*counts[k]++
			unlock()
		})
	}
	wg.Wait()
	for k, n := range counts {
		assert.Equal(t, 50, *n, "key %s", k)
	}
	assert.Zero(t, m.Len())
}

func ExampleMap() {
	var locks keymu.Map
	unlock := locks.Lock("thread-1")
	fmt.Println(locks.Len())
	unlock()
	fmt.Println(locks.Len())
	// Output:
	// 1
	// 0
}
