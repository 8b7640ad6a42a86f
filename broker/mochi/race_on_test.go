//go:build race

package mqtt

// raceDetector: see race_off_test.go.
const raceDetector = true
