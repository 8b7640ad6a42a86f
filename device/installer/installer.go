// Package installer is the agent's installer (ARCHITECTURE.md §4): it
// reconciles the retained desired document of chorus/v1/<device>/desired
// on the device. For each desired skill it downloads the artifact from the
// gateway, verifies its size and sha256, unpacks it safely into staging,
// validates it with the discovery rules, and renames it into the installed
// root; skills it installed that are no longer desired it removes. It tells
// the skill manager through the bus events of SKILL_MANAGER §6.
//
// Guarantees:
//   - Never a half-installed skill: a skill directory appears in the
//     installed root by one rename of a complete, validated tree; an upgrade
//     is rename old aside, rename new in, remove old.
//   - Level-based and idempotent: Apply compares the document with what is
//     on disk and in the installer's state file and does only the
//     difference; applying the same document twice does nothing the second
//     time and emits nothing.
//   - It only ever replaces or removes skills it installed itself (listed in
//     <InstalledRoot>/.chorus-managed.json). Bundled and user roots are never
//     touched, nor any installed skill it did not install.
//   - Apply and CleanStaging run one at a time; the installer is safe for
//     concurrent use.
package installer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/gateway/artifact"
	"github.com/chorus-edge/chorus/gateway/desired"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// The bus events the installer emits (SKILL_MANAGER §6, OVOS-INSTALL-1).
const (
	TypeInstallComplete   = "ovos.skills.install.complete"   // {"skill_id", "version"}
	TypeInstallFailed     = "ovos.skills.install.failed"     // {"error", "detail", "skill_id"}
	TypeUninstallComplete = "ovos.skills.uninstall.complete" // {}
	TypeUninstallFailed   = "ovos.skills.uninstall.failed"   // {"error", "detail", "skill_id"}
)

// The OVOS-INSTALL-1 error vocabulary used in failed events
// (SKILL_MANAGER §10): a URL the installer cannot use, and any failure of
// the install itself, with the reason in "detail".
const (
	ErrorURL     = "skill url validation failed"
	ErrorInstall = "error in pip subprocess"
)

// StateFile is the installer's record, in the installed root, of the skills
// it manages. Discovery skips dot-names, so it is never taken for a skill.
const StateFile = ".chorus-managed.json"

// Errors callers branch on.
var (
	// ErrIntegrity: the downloaded artifact's size or sha256 is not the
	// desired one. The partial download is deleted.
	ErrIntegrity = errors.New("artifact integrity check failed")
	// ErrNotManaged: the installed root holds a skill of that id that the
	// installer did not install; it is left alone.
	ErrNotManaged = errors.New("installed skill not managed by the installer")
)

// Emitter is the part of the bus client the installer uses.
type Emitter interface {
	Emit(ctx context.Context, m envelope.Message) error
}

// Config configures an Installer. Device, InstalledRoot and Bus are
// required; every other zero field takes a default (see New).
type Config struct {
	Device string
	// ServerURL is the gateway's HTTP base URL; relative artifact URLs
	// (/v1/artifacts/<sha256>) are appended to it.
	ServerURL string
	// Username and Password are the device's own credentials, sent as HTTP
	// Basic auth, and only to ServerURL's scheme and host.
	Username, Password string
	// InstalledRoot is <data-dir>/installed, the discovery root the
	// installer owns.
	InstalledRoot string
	// StagingDir holds downloads and unpacked trees; it must be on the same
	// filesystem as InstalledRoot so the final rename is atomic. Default:
	// <dir of InstalledRoot>/staging.
	StagingDir string
	// SettingsRoot holds <skill>/settings.json. Default: <dir of
	// InstalledRoot>/settings.
	SettingsRoot string
	Bus          Emitter
	Client       *http.Client    // default: a client with no overall timeout (Apply's ctx bounds it)
	Limits       artifact.Limits // unpack caps; zero fields take artifact's defaults
	MaxDownload  int64           // largest artifact downloaded; default desired.MaxArtifactSize
	// OnApplied is called after a pass that reached the whole document,
	// with its version and the ids of the skills the installer manages
	// (sorted), for the skills topic's applied_version and managed flags.
	OnApplied func(version int64, managed []string)
	// Prepare finishes an unpacked, validated skill in staging before it
	// is placed (the OVOS runtime installs its wheels there: docs/ovos.md);
	// its error fails the install, and nothing is placed. nil = nothing.
	Prepare func(ctx context.Context, s discovery.Skill) error
	Logger  *slog.Logger
	Now     func() time.Time
}

// Installer reconciles desired documents. Create it with New.
type Installer struct {
	cfg Config
	log *slog.Logger

	// run serialises Apply and CleanStaging: each holds it for a whole pass.
	run chan struct{}

	// mu guards st, the last saved state, for the accessors; passes copy
	// it, work on the copy and swap it back after saving.
	mu sync.Mutex
	st state
}

// New checks cfg, fills its defaults, creates the installed and staging
// directories and loads the state file. A state file that cannot be read is
// an error: without it the installer cannot tell its skills from others.
func New(cfg Config) (*Installer, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	for _, dir := range []string{cfg.InstalledRoot, cfg.StagingDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("installer: %w", err)
		}
	}
	st, err := loadState(filepath.Join(cfg.InstalledRoot, StateFile))
	if err != nil {
		return nil, fmt.Errorf("installer: %w", err)
	}
	return &Installer{
		cfg: cfg, log: cfg.Logger.With("component", "installer"),
		run: make(chan struct{}, 1), st: st,
	}, nil
}

func (c *Config) setDefaults() error {
	switch {
	case c.Device == "" || c.InstalledRoot == "":
		return errors.New("installer: device and installed root are required")
	case c.Bus == nil:
		return errors.New("installer: a bus is required")
	}
	if err := topic.ValidDeviceID(c.Device); err != nil {
		return fmt.Errorf("installer: %w", err)
	}
	data := filepath.Dir(filepath.Clean(c.InstalledRoot))
	if c.StagingDir == "" {
		c.StagingDir = filepath.Join(data, "staging")
	}
	if c.SettingsRoot == "" {
		c.SettingsRoot = filepath.Join(data, "settings")
	}
	if c.Client == nil {
		c.Client = &http.Client{}
	}
	if c.MaxDownload <= 0 {
		c.MaxDownload = desired.MaxArtifactSize
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Managed returns the ids of the skills the installer manages, sorted.
func (in *Installer) Managed() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.st.managed()
}

// Applied returns the version of the last document fully applied; ok is
// false before the first one.
func (in *Installer) Applied() (version int64, ok bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.st.AppliedVersion == nil {
		return 0, false
	}
	return *in.st.AppliedVersion, true
}

// acquire takes the pass lock, or gives up with ctx.
func (in *Installer) acquire(ctx context.Context) error {
	select {
	case in.run <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (in *Installer) release() { <-in.run }
