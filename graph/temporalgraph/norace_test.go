//go:build !race

package temporalgraph_test

const raceEnabled = false
