//go:build !race

package broker_test

// raceDetector reports whether the tests run with -race. The race detector
// doubles the runtime's nosplit stack guard (800 → 1,600 bytes), which
// shrinkstack counts as in use, so an idle connection's stack cannot shrink
// below 8 KiB under it (TestIdleDeviceStacksShrink).
const raceDetector = false
