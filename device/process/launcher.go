package process

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	// EnvWSURL is the skill's own route on the agent's OVOS websocket
	// drop-in, where a stock OVOS skill connects with the skill's identity
	// (set when the drop-in runs; docs/ovos.md).
	EnvWSURL = "CHORUS_WS_URL"
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

	// Identity returns the account a skill runs under (skill isolation,
	// docs/security.md). nil runs skills as the agent's own user.
	Identity func(skill string) (Identity, error)
	// DropCaps runs skills through the trampoline even without Identity,
	// so that an agent holding capabilities never passes them on.
	DropCaps bool
	// Trampoline is the command line of ExecMain, before its arguments;
	// default {os.Executable(), TrampolineCommand}. Used with Identity or
	// DropCaps.
	Trampoline []string
	// SkillEnv returns KEY=VALUE variables for one skill (its websocket
	// URL); they cannot override CHORUS_* either.
	SkillEnv func(skill string) []string
	// Records is the file where running skills are recorded, so that
	// ReapOrphans can kill what they left after an agent crash; "" = none.
	Records string
	// OVOS runs the runtime ovos skills (ovos.go).
	OVOS OVOS
}

// Identity is the Unix account a skill process runs under.
type Identity struct {
	UID, GID uint32
	Home     string // HOME: the skill's own writable directory
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
	exe, _ := os.Executable()
	if c.Bin == "" {
		c.Bin = exe
	}
	if len(c.Trampoline) == 0 {
		c.Trampoline = []string{exe, TrampolineCommand}
	}
	return c
}

// Launcher starts skill processes for one device. It holds no mutable
// state, so it is safe for concurrent use.
type Launcher struct {
	cfg  Config
	recs *records // nil without Config.Records
}

// NewLauncher returns a Launcher with cfg's defaults filled in.
func NewLauncher(cfg Config) *Launcher {
	cfg = cfg.withDefaults()
	return &Launcher{cfg: cfg, recs: newRecords(cfg.Records)}
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
	id, err := l.identity(s.ID)
	if err != nil {
		return nil, fmt.Errorf("start skill %s: %w", s.ID, err)
	}
	if s.Runtime == discovery.RuntimeOVOS {
		return l.startOVOS(s, id)
	}
	env, err := l.env(s.ID, id)
	if err != nil {
		return nil, fmt.Errorf("start skill %s: %w", s.ID, err)
	}
	cmd, err := l.command(s, env, id)
	if err != nil {
		return nil, fmt.Errorf("start skill %s: %w", s.ID, err)
	}
	p, err := start(s.ID, cmd, l.cfg, l.recs)
	if err != nil {
		return nil, fmt.Errorf("start skill %s: %w", s.ID, err)
	}
	return p, nil
}

// startOVOS starts a runtime ovos skill's launcher (ovos.go).
func (l *Launcher) startOVOS(s discovery.Skill, id *Identity) (*Process, error) {
	cmd, err := l.ovosCommand(s, id)
	if err != nil {
		return nil, fmt.Errorf("start skill %s: %w", s.ID, err)
	}
	p, err := start(s.ID, cmd, l.cfg, l.recs)
	if err != nil {
		return nil, fmt.Errorf("start skill %s: %w", s.ID, err)
	}
	return p, nil
}

func (l *Launcher) identity(skill string) (*Identity, error) {
	if l.cfg.Identity == nil {
		return nil, nil
	}
	id, err := l.cfg.Identity(skill)
	if err != nil {
		return nil, err
	}
	return &id, nil
}

// env builds the child's environment: the inherited variables, ExtraEnv,
// SkillEnv, then the CHORUS_* variables last, so they win over any duplicate
// (exec keeps the last value of a key). A skill with its own identity gets
// its own HOME and none of the agent's user names.
func (l *Launcher) env(skill string, id *Identity) ([]string, error) {
	if err := topic.ValidSkillID(skill); err != nil {
		return nil, err
	}
	prefix, err := topic.BusPrefix(l.cfg.Device)
	if err != nil {
		return nil, fmt.Errorf("device: %w", err)
	}
	user, password, err := l.Credentials(skill)
	if err != nil {
		return nil, err
	}
	env := l.inheritedEnv(id)
	env = append(env, l.cfg.ExtraEnv...)
	if l.cfg.SkillEnv != nil {
		env = append(env, l.cfg.SkillEnv(skill)...)
	}
	return append(env,
		EnvMQTTURL+"="+l.cfg.MQTTURL,
		EnvUsername+"="+user,
		EnvPassword+"="+password,
		EnvDevice+"="+l.cfg.Device,
		EnvSkillID+"="+skill,
		EnvBusPrefix+"="+prefix,
		EnvSettings+"="+l.SettingsPath(skill),
		EnvBin+"="+l.cfg.Bin,
	), nil
}

// Credentials mints skill's MQTT username and password in the configured
// form (docs/security.md, "Skill credential forms"): what its process gets,
// and what the websocket drop-in relays its OVOS client with.
func (l *Launcher) Credentials(skill string) (username, password string, err error) {
	if err := topic.ValidSkillID(skill); err != nil {
		return "", "", err
	}
	if len(l.cfg.Key) != ed25519.PrivateKeySize {
		return "", "", errors.New("no device signing key to mint the skill's credentials")
	}
	username = skillcred.Username(l.cfg.Device, skill)
	switch l.cfg.Credentials {
	case "", CredentialsSigned:
		return username, skillcred.Mint(l.cfg.Key, l.cfg.KeyVersion, l.cfg.Device, skill), nil
	case CredentialsDerived:
		if l.cfg.DeviceSecret == "" {
			return "", "", errors.New("derived skill credentials need the device secret")
		}
		return username, skillcred.MintDerived(skillcred.DeriveKey(l.cfg.DeviceSecret), l.cfg.KeyVersion, l.cfg.Device, skill), nil
	}
	return "", "", fmt.Errorf("skill credential form %q: want %s or %s", l.cfg.Credentials, CredentialsSigned, CredentialsDerived)
}

func (l *Launcher) inheritedEnv(id *Identity) []string {
	var env []string
	for _, k := range inheritedNames() {
		if id != nil && (k == "HOME" || k == "USER" || k == "LOGNAME") {
			continue // the agent's; the skill has no passwd entry
		}
		if v := l.cfg.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	if id != nil {
		env = append(env, "HOME="+id.Home)
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
// directory, in a new process group whose id is the child's pid, killed by
// the kernel if the agent dies (SIGKILL, parent-death signal). With an
// identity, or when the agent holds capabilities, the child is the
// trampoline (ExecMain), which drops them before it becomes the skill.
func (l *Launcher) command(s discovery.Skill, env []string, id *Identity) (*exec.Cmd, error) {
	cmd := &exec.Cmd{
		Path: s.Exec, Args: []string{s.Exec}, Dir: s.Dir, Env: env,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if id == nil && !l.cfg.DropCaps {
		return cmd, nil
	}
	rel, err := filepath.Rel(s.Dir, s.Exec)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, fmt.Errorf("exec %s is not inside %s", s.Exec, s.Dir)
	}
	if l.cfg.Trampoline[0] == "" {
		return nil, errors.New("no trampoline to drop privileges with (the agent's executable is unknown)")
	}
	cmd.Path = l.cfg.Trampoline[0]
	cmd.Args = append(append([]string(nil), l.cfg.Trampoline...), trampolineArgs(id, os.Getpid(), "./"+rel)...)
	return cmd, nil
}
