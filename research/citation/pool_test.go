package citation

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFinalizeConcurrentReaders finalizes different answers at once: the
// pooled Markdown readers must give each call what a call alone gives.
func TestFinalizeConcurrentReaders(t *testing.T) {
	long, longSources := benchAnswer()
	s := ForResult("Go blog", "https://go.dev/blog/range-functions", 0, 0)
	cases := []struct {
		answer  string
		sources []Source
	}{
		{long, longSources},
		{"Short [" + s.Label + "](" + s.ShortURL + ") and [made up](https://evil.example/x).\n", []Source{s}},
		{strings.Repeat(`[a](b "x [c](<d (e`, 50), nil},
	}
	want := make([]string, len(cases))
	for i, c := range cases {
		want[i] = Finalize(c.answer, c.sources).Text
	}
	var wg sync.WaitGroup
	for range 4 {
		for i, c := range cases {
			wg.Go(func() {
				assert.Equal(t, want[i], Finalize(c.answer, c.sources).Text)
			})
		}
	}
	wg.Wait()
}
