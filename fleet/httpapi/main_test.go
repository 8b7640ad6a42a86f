package httpapi_test

import (
	"testing"

	"github.com/chorus-edge/chorus/gateway/leakcheck"
)

// No goroutine of the API server or the controller behind it outlives the tests (STYLE.md 4; docs/testing.md).
func TestMain(m *testing.M) { leakcheck.Main(m) }
