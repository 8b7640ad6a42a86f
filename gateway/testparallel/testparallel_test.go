package testparallel

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// AtLeast raises -test.parallel above GOMAXPROCS and never lowers it, and
// leaves a -parallel given on the command line alone.
func TestAtLeast(t *testing.T) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	before := flag.Lookup("test.parallel").Value.String()
	n := runtime.GOMAXPROCS(0) + 3
	AtLeast(n)
	got := flag.Lookup("test.parallel").Value.String()
	switch {
	case given && got != before:
		t.Fatalf("-parallel %s given, AtLeast(%d) changed it to %s", before, n, got)
	case !given && got != strconv.Itoa(n):
		t.Fatalf("-test.parallel = %s after AtLeast(%d), want %d", got, n, n)
	}
	AtLeast(1)
	if again := flag.Lookup("test.parallel").Value.String(); again != got {
		t.Fatalf("AtLeast(1) changed -test.parallel from %s to %s", got, again)
	}
}
