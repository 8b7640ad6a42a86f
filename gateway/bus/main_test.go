package bus_test

import (
	"testing"

	"github.com/chorus-edge/chorus/gateway/leakcheck"
)

// No goroutine of a bus client outlives the tests (STYLE.md 4; docs/testing.md).
func TestMain(m *testing.M) { leakcheck.Main(m) }
