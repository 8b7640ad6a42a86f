//go:build !race

package mqtt

// raceDetector reports whether the tests run with -race. Under it the
// compiler instruments every function (larger frames, and a few
// allocations of its own) and the runtime doubles its stack guard, so
// bounds on stack bytes and allocations are looser there.
const raceDetector = false
