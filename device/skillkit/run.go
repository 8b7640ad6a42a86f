package skillkit

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
)

// DefaultConnectTimeout bounds the first connection to the broker; the
// agent's readiness timeout (skills.ready_timeout, 10 s) is the outer bound.
const DefaultConnectTimeout = 10 * time.Second

// Config tunes RunConfig. Its zero value is what Run uses.
type Config struct {
	Getenv         func(string) string // default os.Getenv
	Logger         *slog.Logger        // default text to stderr, which the agent logs
	ConnectTimeout time.Duration       // default DefaultConnectTimeout
}

func (c Config) withDefaults() Config {
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	return c
}

// Run runs a skill with the process environment: see RunConfig.
func Run(ctx context.Context, setup func(s *Skill) error) error {
	return RunConfig(ctx, Config{}, setup)
}

// RunConfig reads the skill's environment, connects to the device's bus with
// the skill's credentials, calls setup (which subscribes the skill's
// handlers), then announces readiness with chorus.skill.ready {"skill_id"}
// (context.skill_id the same)
// (SKILL_MANAGER §1, ready: message) and serves until ctx ends or the process
// receives SIGTERM or SIGINT (the agent's stop, SIGTERM; SKILL_MANAGER §2).
// It then removes the handlers, waits for them and disconnects cleanly.
//
// A stop is a nil error; failing to read the environment, connect, set up or
// announce readiness is an error, and the skill should exit non-zero.
func RunConfig(ctx context.Context, cfg Config, setup func(s *Skill) error) error {
	cfg = cfg.withDefaults()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	env, err := FromEnv(cfg.Getenv)
	if err != nil {
		return err
	}
	log := cfg.Logger.With("skill_id", env.SkillID)
	tr, err := dial(ctx, env, cfg, log)
	if err != nil {
		return err
	}
	defer tr.Close()
	c, err := bus.New(bus.Config{Transport: tr, Device: env.Device, Logger: log})
	if err != nil {
		return fmt.Errorf("skill %s: %w", env.SkillID, err)
	}
	defer c.Close()
	s := &Skill{env: env, bus: c, log: log}
	if err := serve(ctx, s, setup); err != nil {
		return err
	}
	log.Info("skill stopping")
	return nil
}

// dial connects with the skill's credentials. The client id is the skill's
// username, so a restarted skill takes over its previous connection.
func dial(ctx context.Context, env Env, cfg Config, log *slog.Logger) (*bus.MQTT, error) {
	dctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	tr, err := bus.DialMQTT(dctx, bus.MQTTConfig{
		URL: env.MQTTURL, ClientID: env.Username,
		Username: env.Username, Password: env.Password,
		CleanStart: true, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("skill %s: connect to the bus: %w", env.SkillID, err)
	}
	return tr, nil
}

// serve runs setup, announces readiness and waits for ctx.
func serve(ctx context.Context, s *Skill, setup func(*Skill) error) error {
	if err := setup(s); err != nil {
		return fmt.Errorf("skill %s: setup: %w", s.ID(), err)
	}
	if ctx.Err() != nil {
		return nil // stopped during setup: nothing to announce
	}
	// context.skill_id binds the claim to this skill: the agent takes
	// readiness only when it names the skill that is ready (SKILL_MANAGER §1).
	ready := envelope.New(TypeReady, map[string]any{"skill_id": s.ID()}).WithContext("skill_id", s.ID())
	if err := s.bus.Emit(ctx, ready); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while announcing
		}
		return fmt.Errorf("skill %s: announce readiness: %w", s.ID(), err)
	}
	s.log.Info("skill ready")
	<-ctx.Done()
	return nil
}
