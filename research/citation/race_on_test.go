//go:build race

package citation

// raceDetector is set when the tests run with -race.
const raceDetector = true
