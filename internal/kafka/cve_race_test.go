//go:build race

package kafka

// raceDetector: the race detector's shadow memory and per-goroutine state
// make the process's RSS no measure of the broker's (the CVE-2022-34917
// test then bounds heap and stacks only, with room for its overhead).
const raceDetector = true
