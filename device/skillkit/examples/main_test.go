package examples_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/chorus-edge/chorus/device/skillkit"
	"github.com/chorus-edge/chorus/device/skillkit/examples"
)

// TestMain lets the test binary stand in for the chorus binary: the bundled
// skills' run.sh execs "$CHORUS_BIN" skill example NAME, and the tests point
// CHORUS_BIN at this binary, so the real skill directories run unchanged.
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "skill" && os.Args[2] == "example" {
		if err := examples.Run(context.Background(), os.Args[3], skillkit.Config{}); err != nil {
			fmt.Fprintln(os.Stderr, "example skill:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
