//go:build race

package broker_test

// raceDetector: see race_off_test.go.
const raceDetector = true
