package agent

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/connectivity"
	"github.com/chorus-edge/chorus/device/process"
	"github.com/chorus-edge/chorus/device/skilluser/skillusertest"
	"github.com/chorus-edge/chorus/gateway/leakcheck"
	"github.com/chorus-edge/chorus/gateway/state"
	"github.com/chorus-edge/chorus/gateway/testparallel"
)

const wait = 15 * time.Second

// The test binary doubles as an agent process so a test can kill -9 it,
// and as the skill launcher (chorus skill-exec).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == process.TrampolineCommand {
		fmt.Fprintln(os.Stderr, process.ExecMain(os.Args[2:]))
		os.Exit(126)
	}
	if len(os.Args) > 2 && os.Args[1] == testSkillCommand {
		os.Exit(runTestSkill(os.Args[2]))
	}
	if os.Getenv("CHORUS_AGENT_CHILD") != "" {
		os.Exit(runChild())
	}
	// Four tests at a time (go test's default is GOMAXPROCS, 2 here): each
	// has its own broker, data dirs and skill uid range, and mostly waits
	// on its agent's processes and messages.
	testparallel.AtLeast(4)
	os.Exit(leakcheck.Run(m)) // docs/testing.md: no goroutine of ours outlives the tests
}

func runChild() int {
	var c childConfig
	if err := json.Unmarshal([]byte(os.Getenv("CHORUS_AGENT_CHILD")), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg := Config{
		Device: c.Device, MQTTURL: c.MQTTURL, Username: c.Device, Password: c.Password,
		Key: ed25519.NewKeyFromSeed(c.Seed), KeyVersion: 1, DataDir: c.DataDir,
		Skills: c.Skills, Connectivity: configs.Connectivity{CheckInterval: 60}, Bundled: c.Bundled,
		WillDelay: time.Second,
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	a, err := Start(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	<-ctx.Done()
	_ = a.Close(context.Background())
	return 0
}

// childConfig is what the child agent process needs.
type childConfig struct {
	Device, MQTTURL, Password, DataDir string
	Seed                               []byte
	Skills                             configs.Skills
	Bundled                            []string
}

// testSkills is the default skills section with a uid range of the test's
// own, so agents of tests running at once never sweep each other's skills.
func testSkills(t *testing.T) configs.Skills {
	s := configs.Default().Skills
	s.UIDRange = skillusertest.Range(t).String()
	return s
}

type fixture struct {
	b   *broker.Broker
	dev brokertest.Device
	obs *brokertest.Client
	cfg Config
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dev := brokertest.NewDevice(t, "pi-1")
	op, opSecret := brokertest.NewOperator(t, "t")
	b := brokertest.Start(t, broker.Config{}, dev.Account, op)
	obs := brokertest.MustConnect(t, b.Addr(), op.Username, opSecret, brokertest.ConnectOptions{ClientID: "obs"})
	obs.Sub(t, "chorus/v1/pi-1/#")
	cfg := Config{
		Device: "pi-1", MQTTURL: "mqtt://" + b.Addr(), Username: "pi-1", Password: dev.Secret,
		Key: dev.Key, KeyVersion: 1, DataDir: skillusertest.OpenDir(t), Bundled: []string{skillusertest.OpenDir(t)},
		Skills:       testSkills(t),
		Connectivity: configs.Connectivity{CheckInterval: 60},
		WillDelay:    time.Second, Version: "test",
		Logger: brokertest.Logger(t),
	}
	return &fixture{b: b, dev: dev, obs: obs, cfg: cfg}
}

// availability waits for the next availability message and returns its
// payload and session property.
func (f *fixture) availability(t *testing.T) (string, string) {
	t.Helper()
	m := f.obs.Expect(t, "chorus/v1/pi-1/availability", wait)
	return string(m.Payload), sessionOf(m)
}

func sessionOf(m *paho.Publish) string {
	if m.Properties == nil {
		return ""
	}
	return m.Properties.User.Get("session")
}

func TestBirthAndCleanShutdown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, err := Start(context.Background(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	avail, session := f.availability(t)
	if avail != "online" || session != "1" {
		t.Fatalf("availability = %q session %q, want online 1", avail, session)
	}
	birth, err := state.ParseBirth(f.obs.Expect(t, "chorus/v1/pi-1/birth", wait).Payload)
	if err != nil {
		t.Fatal(err)
	}
	if birth.Session != 1 || birth.AgentVersion != "test" || birth.Arch == "" {
		t.Fatalf("birth = %+v", birth)
	}
	f.obs.Expect(t, "chorus/v1/pi-1/skills", wait)
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if state, session := f.availability(t); state != "offline" || session != "1" {
		t.Fatalf("after Close: %q session %q, want offline 1", state, session)
	}

	// A restart is a new birth session.
	a2, err := Start(context.Background(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close(context.Background())
	if state, session := f.availability(t); state != "online" || session != "2" {
		t.Fatalf("after restart: %q session %q, want online 2", state, session)
	}
}

// kill -9 of the agent: the broker publishes the Will, offline with the
// session of the connection that died.
func TestWillOnKill9(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	child, err := json.Marshal(childConfig{Device: "pi-1", MQTTURL: f.cfg.MQTTURL, Password: f.dev.Secret,
		DataDir: f.cfg.DataDir, Seed: f.dev.Key.Seed(), Skills: f.cfg.Skills})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CHORUS_AGENT_CHILD="+string(child))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })

	state, session := f.availability(t)
	if state != "online" {
		t.Fatalf("availability = %q", state)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	if s, sess := f.availability(t); s != "offline" || sess != session {
		t.Fatalf("will: %q session %q, want offline %s", s, sess, session)
	}
}

var zeroTime time.Time

// The network monitor's first observation reaches the manager: the retained
// connectivity topic reports the network up (the interface lister is faked;
// no network is touched).
func TestNetworkMonitorReachesConnectivity(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.cfg.Interfaces = func() ([]connectivity.Interface, error) {
		return []connectivity.Interface{{Name: "eth0", Up: true, Addrs: []string{"192.0.2.10/24"}}}, nil
	}
	a, err := Start(context.Background(), f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	deadline := time.Now().Add(wait)
	for {
		var c struct{ Network, Internet bool }
		m := f.obs.Expect(t, "chorus/v1/pi-1/connectivity", time.Until(deadline))
		if err := json.Unmarshal(m.Payload, &c); err != nil {
			t.Fatal(err)
		}
		if c.Network && !c.Internet {
			return
		}
	}
}
