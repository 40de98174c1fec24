//go:build !race

package kafka

// raceDetector: see cve_race_test.go.
const raceDetector = false
