package controller_test

import (
	"testing"

	"github.com/chorus-edge/chorus/gateway/leakcheck"
	"github.com/chorus-edge/chorus/gateway/testparallel"
)

// parallel is how many tests run at once unless -parallel is given: the
// controller's tests mostly wait (a broker's deliveries, quiet periods,
// the engine's passes), so on a 2-core machine four at a time halve the
// package's time for the same CPU (go test -race ./fleet/controller, load
// 5-7: 51.6 s at go test's default of 2, 26.4 s at 4; 31.6 and 27.6 CPU-s).
const parallel = 4

// Every goroutine a controller test starts is stopped by the time the tests
// end (STYLE.md 4); the check runs once, after all of them (docs/testing.md).
func TestMain(m *testing.M) {
	testparallel.AtLeast(parallel)
	leakcheck.Main(m)
}
