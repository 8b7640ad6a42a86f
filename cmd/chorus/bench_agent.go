//go:build !chorus_agent

package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/spf13/cobra"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/agentbench"
	"github.com/chorus-edge/chorus/fleet/fleetbench"
	"github.com/chorus-edge/chorus/gateway/state"
)

// ---- agent ----

type agentReport struct {
	Skills          int     `json:"skills"`
	DiscoverDirs    int     `json:"discovery_dirs"`
	DiscoverMs      float64 `json:"discovery_ms"`
	RescanMs        float64 `json:"rescan_discovery_ms"`
	BusRescanMs     float64 `json:"rescan_bus_round_trip_ms"`
	StartToReadyMs  float64 `json:"start_to_ready_ms"`
	AgentRSSMiB     float64 `json:"agent_idle_vm_rss_mib"`
	AgentHWMMiB     float64 `json:"agent_vm_hwm_mib"`
	AgentAnonMiB    float64 `json:"agent_idle_rss_anon_mib"` // heap, stacks, runtime
	AgentFileMiB    float64 `json:"agent_idle_rss_file_mib"` // pages of the binary
	SkillProcs      int     `json:"skill_processes"`
	SkillProcsRSSMi float64 `json:"skill_processes_vm_rss_mib"`
	Load            string  `json:"machine_load"`
	Notes           []string
}

func (a *app) newBenchAgentCmd() *cobra.Command {
	var (
		skills, dirs int
		idle         time.Duration
		jsonOut      bool
		bin          string
		ovos         ovosBenchFlags
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Agent start-to-ready, discovery and rescan time, idle RSS with N trivial skills",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.benchLogger(cmd)
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			if ovos.skills > 0 {
				return a.runOVOSBench(ctx, ovos, idle, bin, jsonOut)
			}
			rep, err := a.benchAgent(ctx, skills, dirs, idle, bin)
			if err != nil {
				return err
			}
			if jsonOut {
				return a.printJSON(rep)
			}
			w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintf(w, "skills\t%d\nstart to ready\t%.0f ms\ndiscovery of %d dirs\t%.1f ms (rescan %.1f ms)\nbus rescan round trip\t%.1f ms\n",
				rep.Skills, rep.StartToReadyMs, rep.DiscoverDirs, rep.DiscoverMs, rep.RescanMs, rep.BusRescanMs)
			fmt.Fprintf(w, "agent idle VmRSS\t%.1f MiB (VmHWM %.1f MiB; anonymous %.1f MiB, binary and other files %.1f MiB)\nskill processes\t%d, %.1f MiB RSS in all\nmachine load\t%s\n",
				rep.AgentRSSMiB, rep.AgentHWMMiB, rep.AgentAnonMiB, rep.AgentFileMiB, rep.SkillProcs, rep.SkillProcsRSSMi, rep.Load)
			return w.Flush()
		},
	}
	cmd.Flags().IntVar(&skills, "skills", 20, "trivial skills the agent runs")
	cmd.Flags().IntVar(&dirs, "discover", 1000, "skill directories (1 KiB execs) to time discovery over")
	cmd.Flags().DurationVar(&idle, "idle", 3*time.Second, "wait after ready before reading the idle RSS")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&bin, "bin", "", "the chorus binary to run as the agent (default: this one)")
	ovos.register(cmd)
	return cmd
}

func (a *app) benchAgent(ctx context.Context, n, dirs int, idle time.Duration, bin string) (*agentReport, error) {
	dir, err := fleetbench.TempDir()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// Run as root, the agent isolates skills under their own uids
	// (skills.isolation auto), which must traverse the data dir below this
	// one: MkdirTemp makes it 0700 (docs/install.md says o+x).
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	rep := &agentReport{Skills: n, DiscoverDirs: dirs, Load: loadAvg()}
	if err := timeDiscovery(filepath.Join(dir, "discover"), dirs, rep); err != nil {
		return nil, err
	}
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	return rep, a.runBenchAgent(ctx, dir, n, idle, bin, rep)
}

func timeDiscovery(root string, n int, rep *agentReport) error {
	if _, err := agentbench.MakeSkills(root, n, 1024); err != nil {
		return err
	}
	cold, found, err := agentbench.TimeDiscovery(root)
	if err != nil {
		return err
	}
	if found != n {
		return fmt.Errorf("discovery found %d of %d skills", found, n)
	}
	best := time.Hour
	for range 3 {
		d, _, _ := agentbench.TimeDiscovery(root)
		best = min(best, d)
	}
	rep.DiscoverMs, rep.RescanMs = ms(cold), ms(best)
	rep.Notes = append(rep.Notes, "discovery_ms is the first scan after the tree was written (page cache warm, as on a running device); rescan is the best of 3 more")
	return nil
}

// runBenchAgent runs `chorus agent` as a child against an in-process broker
// and watches its retained skills report.
func (a *app) runBenchAgent(ctx context.Context, dir string, n int, idle time.Duration, bin string, rep *agentReport) error {
	root := filepath.Join(dir, "skills")
	if _, err := agentbench.MakeSkills(root, n, 1024); err != nil {
		return err
	}
	const dev = "bench-agent"
	secret, _ := broker.NewSecret()
	opSecret, _ := broker.NewSecret()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	table, err := broker.NewTable(broker.DeviceAccount(dev, broker.HashSecret(secret), pub, 1),
		broker.OperatorAccount("bench", broker.HashSecret(opSecret)))
	if err != nil {
		return err
	}
	b, err := broker.Start(broker.Config{MQTTListen: "127.0.0.1:0", Logger: a.log}, table)
	if err != nil {
		return err
	}
	defer b.Close()
	creds := configs.AgentCredentials{Device: dev, MQTTURL: b.URL(), Username: dev, Password: secret,
		SkillKey: configs.EncodeSkillKey(priv), KeyVersion: 1}
	credPath, cfgPath := filepath.Join(dir, "agent.json"), filepath.Join(dir, "config.json")
	if err := configs.WriteAgentCredentials(credPath, creds); err != nil {
		return err
	}
	if err := os.WriteFile(cfgPath, []byte(`{"connectivity":{"phal_timeout":0}}`), 0o600); err != nil {
		return err
	}
	obs, err := newObserver(ctx, b.Addr(), "operator:bench", opSecret, dev, n)
	if err != nil {
		return err
	}
	defer obs.close()
	child := exec.Command(bin, "agent", "--credentials", credPath, "--config", cfgPath, "--skills", root,
		"--data-dir", filepath.Join(dir, "data"), "--ws-listen", "off", "--log-level", "warn")
	child.Stderr, child.Stdout = a.stderr, io.Discard
	start := time.Now()
	if err := child.Start(); err != nil {
		return fmt.Errorf("start the agent: %w", err)
	}
	defer stopChild(child)
	select {
	case at := <-obs.ready:
		rep.StartToReadyMs = ms(at.Sub(start))
	case <-ctx.Done():
		return fmt.Errorf("the agent did not report %d skills loaded: %w", n, ctx.Err())
	}
	a.progress("agent ready with %d skills after %.0f ms", n, rep.StartToReadyMs)
	if rep.BusRescanMs, err = obs.rescan(ctx); err != nil {
		return err
	}
	time.Sleep(idle) // let start-up garbage go before the idle reading
	m, err := agentbench.ProcMemory(child.Process.Pid)
	if err != nil {
		return err
	}
	rep.AgentRSSMiB, rep.AgentHWMMiB = float64(m.RSSKiB)/1024, float64(m.HWMKiB)/1024
	rep.AgentAnonMiB, rep.AgentFileMiB = float64(m.AnonKiB)/1024, float64(m.FileKiB)/1024
	procs, kib := agentbench.ChildrenMemory(child.Process.Pid)
	rep.SkillProcs, rep.SkillProcsRSSMi = procs, float64(kib)/1024
	rep.Notes = append(rep.Notes, "start_to_ready: exec of `chorus agent` → the retained skills report lists every skill loaded (phal_timeout 0, ready: on-start)")
	return nil
}

func stopChild(c *exec.Cmd) {
	_ = c.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = c.Process.Kill()
		<-done
	}
}

// observer watches one device's skills report and answers bus requests.
type observer struct {
	c      *paho.Client
	dev    string
	ready  chan time.Time
	rescnd chan time.Time
}

func newObserver(ctx context.Context, addr, user, pass, dev string, want int) (*observer, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	o := &observer{dev: dev, ready: make(chan time.Time, 1), rescnd: make(chan time.Time, 1)}
	sent := false
	o.c = paho.NewClient(paho.ClientConfig{Conn: conn, ClientID: "bench-observer", OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(pr paho.PublishReceived) (bool, error) {
			now := time.Now()
			if strings.HasSuffix(pr.Packet.Topic, "/bus/skillmanager.rescan.response") {
				select {
				case o.rescnd <- now:
				default:
				}
				return true, nil
			}
			if r, err := state.ParseSkills(pr.Packet.Payload); !sent && err == nil {
				loaded := 0
				for _, s := range r.Skills {
					if s.State == state.Loaded {
						loaded++
					}
				}
				if loaded >= want {
					sent = true
					o.ready <- now
				}
			}
			return true, nil
		}}})
	cp := &paho.Connect{KeepAlive: 60, ClientID: "bench-observer", CleanStart: true, Username: user, UsernameFlag: true, Password: []byte(pass), PasswordFlag: true}
	if _, err := o.c.Connect(ctx, cp); err != nil {
		return nil, err
	}
	prefix := "chorus/v1/" + dev
	if _, err := o.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{
		{Topic: prefix + "/skills", QoS: 1}, {Topic: prefix + "/bus/skillmanager.rescan.response", QoS: 1}}}); err != nil {
		return nil, err
	}
	return o, nil
}

// rescan asks the agent for skillmanager.rescan and times the answer.
func (o *observer) rescan(ctx context.Context) (float64, error) {
	start := time.Now()
	body := []byte(`{"type":"skillmanager.rescan","data":{},"context":{"source":"bench"}}`)
	if _, err := o.c.Publish(ctx, &paho.Publish{Topic: "chorus/v1/" + o.dev + "/bus/skillmanager.rescan", QoS: 1, Payload: body}); err != nil {
		return 0, err
	}
	select {
	case at := <-o.rescnd:
		return ms(at.Sub(start)), nil
	case <-time.After(30 * time.Second):
		return 0, errors.New("no answer to skillmanager.rescan within 30 s")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (o *observer) close() { _ = o.c.Disconnect(&paho.Disconnect{}) }
