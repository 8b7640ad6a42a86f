package external

import (
	"testing"

	"github.com/chorus-edge/chorus/gateway/leakcheck"
)

// No goroutine of a sync loop outlives the tests (STYLE.md 4; docs/testing.md).
func TestMain(m *testing.M) { leakcheck.Main(m) }
