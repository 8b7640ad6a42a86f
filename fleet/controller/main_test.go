package controller_test

import (
	"testing"

	"github.com/chorus-edge/chorus/gateway/leakcheck"
)

// Every goroutine a controller test starts is stopped by the time the tests
// end (STYLE.md 4); the check runs once, after all of them (docs/testing.md).
func TestMain(m *testing.M) { leakcheck.Main(m) }
