// Package heapcost measures, for tests, how many bytes of Go heap a
// structure keeps per object: the tests that hold a per-device figure to a
// bound (issue 19's memory per device) share one way of taking it.
package heapcost

import "runtime"

// PerObject returns the growth of the live heap across build, divided by
// n: a collection runs before and after, so only what build left reachable
// counts. build must store what it makes where the caller keeps it (a
// slice or a structure the caller uses afterwards), or it is collected and
// not counted.
func PerObject(n int, build func()) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(build)
	return (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(n)
}
