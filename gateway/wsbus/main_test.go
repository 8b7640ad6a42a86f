package wsbus

import (
	"testing"

	"github.com/chorus-edge/chorus/gateway/leakcheck"
)

// No goroutine of the websocket server outlives the tests (STYLE.md 4; docs/testing.md).
func TestMain(m *testing.M) { leakcheck.Main(m) }
