package process

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/device/settings"
	"github.com/chorus-edge/chorus/gateway/skillcred"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// Defaults for the zero values of Config. SKILL_MANAGER §2.
const (
	DefaultStopGrace = 5 * time.Second // skills.stop_grace
	DefaultTailLines = 20
	// defaultPath is the child's PATH when the agent has none.
	defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// The skill credential forms of Config.Credentials (skills.credentials).
const (
	CredentialsSigned  = "signed"
	CredentialsDerived = "derived"
)

// The environment variables a skill process receives. SKILL_MANAGER §2.
const (
	EnvMQTTURL   = "CHORUS_MQTT_URL"
	EnvUsername  = "CHORUS_USERNAME"
	EnvPassword  = "CHORUS_PASSWORD"
	EnvDevice    = "CHORUS_DEVICE"
	EnvSkillID   = "CHORUS_SKILL_ID"
	EnvBusPrefix = "CHORUS_BUS_PREFIX"
	EnvSettings  = "CHORUS_SETTINGS"
	EnvBin       = "CHORUS_BIN"
)

// inheritedNames lists the only variables a skill inherits from the agent: what a
// shell script needs to find programs and format text, never the agent's own
// secrets or CHORUS_* settings.
func inheritedNames() []string {
	return []string{
		"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR",
		"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ",
	}
}

// Config is what a Launcher needs. Device and Key are required (Start
// refuses without them, since it cannot mint credentials), and with
// Credentials "derived" so is DeviceSecret; every other zero value has a
// default or means "none".
type Config struct {
	MQTTURL      string              // the broker the skill connects to (CHORUS_MQTT_URL)
	Device       string              // the device id
	Key          ed25519.PrivateKey  // the device's skill signing key
	KeyVersion   int                 // its version, signed into every credential
	Credentials  string              // skill credential form: "signed" (default) or "derived" (skills.credentials)
	DeviceSecret string              // the device's MQTT secret, which keys the derived form
	SettingsRoot string              // settings live in <SettingsRoot>/<skill_id>/settings.json; "" = none
	Bin          string              // CHORUS_BIN; default os.Executable()
	StopGrace    time.Duration       // SIGTERM to SIGKILL; default 5 s
	TailLines    int                 // output lines kept per process; default 20
	Logger       *slog.Logger        // skill output is logged here with skill_id; default discards
	ExtraEnv     []string            // KEY=VALUE added to the environment; cannot override CHORUS_*
	Getenv       func(string) string // reads the inherited variables; default os.Getenv
}

// withDefaults fills the zero values in one place.
func (c Config) withDefaults() Config {
	if c.StopGrace <= 0 {
		c.StopGrace = DefaultStopGrace
	}
	if c.TailLines <= 0 {
		c.TailLines = DefaultTailLines
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.Bin == "" {
		if exe, err := os.Executable(); err == nil {
			c.Bin = exe
		}
	}
	return c
}

// Launcher starts skill processes for one device. It holds no mutable
// state, so it is safe for concurrent use.
type Launcher struct {
	cfg Config
}

// NewLauncher returns a Launcher with cfg's defaults filled in.
func NewLauncher(cfg Config) *Launcher {
	return &Launcher{cfg: cfg.withDefaults()}
}

// Start verifies s's exec target and starts it. SKILL_MANAGER §2.
//
// The error wraps discovery.ErrChanged when the target changed since
// discovery ("changed since discovery; rescan to accept"); nothing is
// started then. On success the caller owns the Process and must either see
// Done closed or call Stop.
func (l *Launcher) Start(s discovery.Skill) (*Process, error) {
	if err := s.VerifyExec(); err != nil {
		return nil, fmt.Errorf("start skill %s: %w", s.ID, err)
	}
	env, err := l.env(s.ID)
	if err != nil {
		return nil, fmt.Errorf("start skill %s: %w", s.ID, err)
	}
	p, err := start(s, env, l.cfg)
	if err != nil {
		return nil, fmt.Errorf("start skill %s: %w", s.ID, err)
	}
	return p, nil
}

// env builds the child's environment: the inherited variables, ExtraEnv,
// then the CHORUS_* variables last, so they win over any duplicate (exec
// keeps the last value of a key).
func (l *Launcher) env(skill string) ([]string, error) {
	if err := topic.ValidSkillID(skill); err != nil {
		return nil, err
	}
	prefix, err := topic.BusPrefix(l.cfg.Device)
	if err != nil {
		return nil, fmt.Errorf("device: %w", err)
	}
	password, err := l.password(skill)
	if err != nil {
		return nil, err
	}
	env := l.inheritedEnv()
	env = append(env, l.cfg.ExtraEnv...)
	return append(env,
		EnvMQTTURL+"="+l.cfg.MQTTURL,
		EnvUsername+"="+skillcred.Username(l.cfg.Device, skill),
		EnvPassword+"="+password,
		EnvDevice+"="+l.cfg.Device,
		EnvSkillID+"="+skill,
		EnvBusPrefix+"="+prefix,
		EnvSettings+"="+l.SettingsPath(skill),
		EnvBin+"="+l.cfg.Bin,
	), nil
}

// password mints the skill's MQTT password in the configured form
// (docs/security.md, "Skill credential forms").
func (l *Launcher) password(skill string) (string, error) {
	if len(l.cfg.Key) != ed25519.PrivateKeySize {
		return "", errors.New("no device signing key to mint the skill's credentials")
	}
	switch l.cfg.Credentials {
	case "", CredentialsSigned:
		return skillcred.Mint(l.cfg.Key, l.cfg.KeyVersion, l.cfg.Device, skill), nil
	case CredentialsDerived:
		if l.cfg.DeviceSecret == "" {
			return "", errors.New("derived skill credentials need the device secret")
		}
		return skillcred.MintDerived(skillcred.DeriveKey(l.cfg.DeviceSecret), l.cfg.KeyVersion, l.cfg.Device, skill), nil
	}
	return "", fmt.Errorf("skill credential form %q: want %s or %s", l.cfg.Credentials, CredentialsSigned, CredentialsDerived)
}

func (l *Launcher) inheritedEnv() []string {
	var env []string
	for _, k := range inheritedNames() {
		if v := l.cfg.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	if l.cfg.Getenv("PATH") == "" {
		env = append(env, "PATH="+defaultPath)
	}
	return env
}

// SettingsPath is the settings file of skill: <SettingsRoot>/<skill>/settings.json,
// or "" when the launcher has no settings root. SKILL_MANAGER §8.
func (l *Launcher) SettingsPath(skill string) string {
	return settings.Path(l.cfg.SettingsRoot, skill)
}

// command is the exec.Cmd for s: its exec target with no arguments, in its
// directory, in a new process group whose id is the child's pid.
func command(s discovery.Skill, env []string, stdout, stderr *os.File) *exec.Cmd {
	return &exec.Cmd{
		Path:        s.Exec,
		Args:        []string{s.Exec},
		Dir:         s.Dir,
		Env:         env,
		Stdout:      stdout,
		Stderr:      stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
}
