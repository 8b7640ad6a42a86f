// Package testparallel raises how many of a test binary's parallel tests
// run at once, for packages whose tests mostly wait (processes, sockets,
// timers) rather than compute: go test's default, GOMAXPROCS, is 2 on a
// 2-core machine, and such a package then takes twice its CPU's time
// (docs/testing.md, "End-to-end tests in parallel").
package testparallel

import (
	"flag"
	"fmt"
	"runtime"
	"strconv"
)

// AtLeast sets -test.parallel to n when it was not given and GOMAXPROCS is
// lower. Call it from TestMain, before m.Run; it parses the flags if they
// are not yet (flag.Parse is idempotent). A -parallel on the command line
// always wins. It panics outside a test binary, where the testing package's
// flags are not registered.
func AtLeast(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given || runtime.GOMAXPROCS(0) >= n {
		return
	}
	if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
		panic(fmt.Sprintf("testparallel: set -test.parallel: %v", err))
	}
}
