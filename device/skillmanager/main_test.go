package skillmanager

import (
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/cmd/chorus/chorusbin"
	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/device/process"
	"github.com/chorus-edge/chorus/gateway/leakcheck"
)

// chorusBin is the chorus binary TestMain provides (chorusbin.Build): the
// example skills run through it, as an agent runs them.
var chorusBin string

func TestMain(m *testing.M) {
	// docs/testing.md: no goroutine of ours outlives the tests.
	chorusbin.Main(m, &chorusBin, func(m *testing.M) int { return leakcheck.Run(m) })
}

// The example skills (ready: message, a real MQTT connection each) load
// through the real launcher and announce readiness themselves.
func TestExampleSkills(t *testing.T) {
	e := newEnv(t)
	e.dcfg = discovery.Config{Bundled: []string{"../../configs/skills"}}
	real := process.NewLauncher(process.Config{MQTTURL: e.brk.URL(), Device: device, Key: e.dev.Key, KeyVersion: 1,
		Bin: chorusBin, StopGrace: 2 * time.Second, Logger: brokertest.Logger(t)})
	m := e.start(func(c *Config) {
		c.Discovery = e.dcfg
		c.Launcher = Launch(real.Start)
		c.Capabilities = []string{"gui"}
	})
	e.waitState("hello.chorus", StateLoaded)
	_ = m
}
