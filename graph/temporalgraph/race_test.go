//go:build race

package temporalgraph_test

// raceEnabled: the race detector slows the encoding of large states some
// fifteen times, so TestLargeState uses a smaller one under it.
const raceEnabled = true
