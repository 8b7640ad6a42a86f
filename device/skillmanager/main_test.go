package skillmanager

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/device/process"
	"github.com/chorus-edge/chorus/gateway/leakcheck"
)

// chorusBin is the chorus binary built once by TestMain, or "" when it does
// not build or lacks `chorus skill example` yet (the example-skill test is
// skipped then; every other test uses shell-script skills).
var chorusBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skillmanager-test")
	if err == nil {
		bin := filepath.Join(dir, "chorus")
		if exec.Command("go", "build", "-o", bin, "../../cmd/chorus").Run() == nil &&
			exec.Command(bin, "skill", "example", "--help").Run() == nil {
			chorusBin = bin
		}
	}
	code := leakcheck.Run(m) // docs/testing.md: no goroutine of ours outlives the tests
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// The example skills (ready: message, a real MQTT connection each) load
// through the real launcher and announce readiness themselves.
func TestExampleSkills(t *testing.T) {
	if chorusBin == "" {
		t.Skip("chorus binary without `skill example`; covered by shell-script skills")
	}
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
