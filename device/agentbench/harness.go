package agentbench

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/configs"
)

// AgentCommand returns the `chorus agent` child with args (after "agent"),
// its stdout and stderr set; Run starts and stops it. Only cmd/chorus knows
// which binary that is (itself or --bin), so it is injected, as
// fleetbench.Config.DeviceProcess is.
type AgentCommand func(args ...string) *exec.Cmd

// agentRun is one `chorus agent` child connected to a broker in this
// process, its retained skills report watched by an observer.
type agentRun struct {
	broker *broker.Broker
	obs    *observer
	child  *exec.Cmd
	start  time.Time // just before the child's exec
}

// agentSetup is what startAgent needs: the run's directory, the skills
// tree, the device name, how many skills make it ready, the agent's
// config.json and its --ws-listen.
type agentSetup struct {
	dir, skills, device string
	want                int
	config              []byte
	wsListen            string
	agent               AgentCommand
	logger              *slog.Logger
}

// startAgent starts a broker on 127.0.0.1:0 with the device's and an
// operator's accounts, the observer, and the agent child. On error what it
// started is stopped; otherwise close stops it all.
func startAgent(ctx context.Context, s agentSetup) (_ *agentRun, err error) {
	secret, opSecret, priv, table, err := benchAccounts(s.device)
	if err != nil {
		return nil, err
	}
	r := &agentRun{}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.broker, err = broker.Start(broker.Config{MQTTListen: "127.0.0.1:0", Logger: s.logger}, table); err != nil {
		return nil, fmt.Errorf("start the bench broker: %w", err)
	}
	credPath, cfgPath := filepath.Join(s.dir, "agent.json"), filepath.Join(s.dir, "config.json")
	creds := configs.AgentCredentials{Device: s.device, MQTTURL: r.broker.URL(), Username: s.device, Password: secret,
		SkillKey: configs.EncodeSkillKey(priv), KeyVersion: 1}
	if err := configs.WriteAgentCredentials(credPath, creds); err != nil {
		return nil, fmt.Errorf("write the agent's credentials: %w", err)
	}
	if err := os.WriteFile(cfgPath, s.config, 0o600); err != nil {
		return nil, fmt.Errorf("write the agent's config: %w", err)
	}
	if r.obs, err = newObserver(ctx, r.broker.Addr(), "operator:bench", opSecret, s.device, s.want); err != nil {
		return nil, fmt.Errorf("connect the bench observer: %w", err)
	}
	r.child = s.agent("--credentials", credPath, "--config", cfgPath, "--skills", s.skills,
		"--data-dir", filepath.Join(s.dir, "data"), "--ws-listen", s.wsListen, "--log-level", "warn")
	r.start = time.Now()
	if err := r.child.Start(); err != nil {
		r.child = nil
		return nil, fmt.Errorf("start the agent: %w", err)
	}
	return r, nil
}

// benchAccounts are the device's and the observing operator's secrets, the
// device's skill key, and the broker table with both accounts.
func benchAccounts(dev string) (secret, opSecret string, priv ed25519.PrivateKey, table *broker.Table, err error) {
	if secret, err = broker.NewSecret(); err != nil {
		return
	}
	if opSecret, err = broker.NewSecret(); err != nil {
		return
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return
	}
	table, err = broker.NewTable(broker.DeviceAccount(dev, broker.HashSecret(secret), pub, 1),
		broker.OperatorAccount("bench", broker.HashSecret(opSecret)))
	return secret, opSecret, priv, table, err
}

// ready waits for the skills report listing every skill loaded and returns
// the time from the agent's exec to it; what says what was awaited.
func (r *agentRun) ready(ctx context.Context, what string) (time.Duration, error) {
	select {
	case at := <-r.obs.ready:
		return at.Sub(r.start), nil
	case <-ctx.Done():
		return 0, fmt.Errorf("the agent did not report %s loaded: %w", what, ctx.Err())
	}
}

// idle waits d (the figures read after it are the idle ones) or ctx's end.
func idle(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait %s idle: %w", d, ctx.Err())
	}
}

// close stops the child, the observer and the broker, in that order, and
// returns after the child has exited.
func (r *agentRun) close() {
	if r.child != nil {
		stopChild(r.child)
	}
	if r.obs != nil {
		r.obs.close()
	}
	if r.broker != nil {
		_ = r.broker.Close()
	}
}

// stopChild sends SIGTERM and waits up to 15 s for the agent's graceful
// stop (its skills get theirs), then kills it.
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

// errNoAgent is Run's answer to a Config without Agent.
var errNoAgent = errors.New("agentbench: no Agent command: nothing starts `chorus agent`")

// tempDir makes the run's directory with mode: run as root, the agent
// isolates skills under their own uids, which must traverse it (0711,
// docs/install.md) or read their code in it (0755); MkdirTemp makes 0700.
func tempDir(mode os.FileMode) (string, error) {
	dir, err := os.MkdirTemp("", "chorus-bench-")
	if err != nil {
		return "", fmt.Errorf("make the bench directory: %w", err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("make the bench directory reachable: %w", err)
	}
	return dir, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
