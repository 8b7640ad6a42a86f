package process

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/device/ovosconf"
	"github.com/chorus-edge/chorus/device/ovosrt"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// DefaultOVOSPassEnv are the variables a launcher inherits from the agent
// when skills.ovos.pass_env is not set: what Python needs to find programs
// and decode text.
var DefaultOVOSPassEnv = []string{"PATH", "LANG", "LC_ALL", "TZ"}

// OVOS runs the skills whose SKILL.md says runtime: ovos (docs/ovos.md).
type OVOS struct {
	// Launcher is the satellite's ovos-skill-launcher (in its OVOS venv,
	// skills.ovos.launcher); "" refuses to start runtime ovos skills.
	Launcher string
	// Root holds each skill's private home, <Root>/<skill>, when skills run
	// as the agent's user; under their own uids it is their own home.
	Root string
	// PassEnv names the variables inherited from the agent; nil = DefaultOVOSPassEnv.
	PassEnv []string
	// Env is KEY=VALUE added for every launcher (skills.ovos.env); a
	// PYTHONPATH given here comes after the skill's own site directory.
	Env []string
	// SkillURL is the skill's own route on the websocket drop-in; nil or ""
	// refuses to start (no drop-in, no bus for the launcher).
	SkillURL func(skill string) string
}

// ovosCommand prepares skill's private directories and generated
// mycroft.conf and returns the launcher's command: `<launcher> <skill id>`
// (ovos-workshop skill_launcher.py _launch_script), in its home, with only
// the environment OVOS needs: HOME, the XDG base directories under it (so
// ovos-config reads the generated mycroft.conf as the user's config and the
// skill keeps its data to itself), PYTHONPATH with its site directory, the
// pass-through variables and skills.ovos.env.
func (l *Launcher) ovosCommand(s discovery.Skill, id *Identity) (*exec.Cmd, error) {
	o := l.cfg.OVOS
	if o.Launcher == "" {
		return nil, errors.New("runtime ovos needs skills.ovos.launcher: the path of ovos-skill-launcher in the satellite's OVOS venv")
	}
	url := ""
	if o.SkillURL != nil {
		url = o.SkillURL(s.ID)
	}
	if url == "" {
		return nil, errors.New("runtime ovos needs the OVOS websocket drop-in (websocket.disabled is set, or --ws-listen off)")
	}
	home, err := l.ovosHome(s.ID, id)
	if err != nil {
		return nil, err
	}
	env, err := l.ovosEnv(s, id, home)
	if err != nil {
		return nil, err
	}
	if err := l.ovosConfig(s.ID, id, home, url); err != nil {
		return nil, err
	}
	return l.launcherCmd(home, env, id, s.ID)
}

// launcherCmd is the launcher with args, in home, through the trampoline
// when the launcher must run under another uid or without capabilities.
func (l *Launcher) launcherCmd(home string, env []string, id *Identity, args ...string) (*exec.Cmd, error) {
	o := l.cfg.OVOS
	cmd := &exec.Cmd{
		Path: o.Launcher, Args: append([]string{o.Launcher}, args...), Dir: home, Env: env,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if id == nil && !l.cfg.DropCaps {
		return cmd, nil
	}
	if l.cfg.Trampoline[0] == "" {
		return nil, errors.New("no trampoline to drop privileges with (the agent's executable is unknown)")
	}
	cmd.Path = l.cfg.Trampoline[0]
	cmd.Args = append(append([]string(nil), l.cfg.Trampoline...), append(trampolineArgs(id, os.Getpid(), o.Launcher), args...)...)
	return cmd, nil
}

// ovosHome is the skill's private home: its own under its uid, else
// <Root>/<skill> (0700).
func (l *Launcher) ovosHome(skill string, id *Identity) (string, error) {
	if err := topic.ValidSkillID(skill); err != nil {
		return "", err
	}
	if id != nil {
		return id.Home, nil
	}
	if l.cfg.OVOS.Root == "" {
		return "", errors.New("runtime ovos: no directory for the skills' private homes")
	}
	home := filepath.Join(l.cfg.OVOS.Root, skill)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", fmt.Errorf("runtime ovos home: %w", err)
	}
	return home, nil
}

// The XDG base directories under a launcher's home (the XDG defaults).
var ovosXDG = [][2]string{
	{"XDG_CONFIG_HOME", ".config"}, {"XDG_DATA_HOME", ".local/share"},
	{"XDG_CACHE_HOME", ".cache"}, {"XDG_STATE_HOME", ".local/state"},
}

// ovosEnv creates the XDG base directories under home and returns the
// launcher's environment: HOME, the XDG directories, the pass-through
// variables, skills.ovos.env and PYTHONPATH with s's site directory. The
// directories belong to the skill's uid when it has one.
func (l *Launcher) ovosEnv(s discovery.Skill, id *Identity, home string) ([]string, error) {
	uid, gid := ownerOf(id)
	env := []string{"HOME=" + home}
	for _, x := range ovosXDG {
		dir := filepath.Join(home, x[1])
		if err := mkdirOwned(home, dir, uid, gid); err != nil {
			return nil, fmt.Errorf("runtime ovos: %s: %w", x[0], err)
		}
		env = append(env, x[0]+"="+dir)
	}
	passed := l.cfg.OVOS.PassEnv
	if passed == nil {
		passed = DefaultOVOSPassEnv
	}
	for _, k := range passed {
		if v := l.cfg.Getenv(k); v != "" && !strings.HasPrefix(k, "CHORUS_") {
			env = append(env, k+"="+v)
		}
	}
	pythonPath := filepath.Join(s.Dir, ovosrt.SiteDir) // the installer's pip target (ovosrt.Install)
	for _, kv := range l.cfg.OVOS.Env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok {
			pythonPath += ":" + v
			continue
		}
		env = append(env, kv)
	}
	if l.cfg.Getenv("PATH") == "" {
		env = append(env, "PATH="+defaultPath)
	}
	return append(env, "PYTHONPATH="+pythonPath), nil
}

// ovosConfig writes the generated config into home:
//   - $XDG_CONFIG_HOME/mycroft/mycroft.conf: the websocket section with
//     the skill's own route (ovos-config reads it as the user config over
//     the system's; ovos-bus-client builds its URL from it), mode 0600;
//   - $XDG_CONFIG_HOME/mycroft/skills/<id>: a link to the skill's settings
//     directory, so the settings.json OVOS keeps there (ovos-workshop
//     settings: <xdg config>/mycroft/skills/<id>/settings.json) is the file
//     the agent's settings watcher and the fleet's settings push use.
func (l *Launcher) ovosConfig(skill string, id *Identity, home, url string) error {
	uid, gid := ownerOf(id)
	confDir := filepath.Join(home, ".config", "mycroft")
	if err := mkdirOwned(home, confDir, uid, gid); err != nil {
		return fmt.Errorf("runtime ovos: %w", err)
	}
	if err := ovosconf.Write(filepath.Join(confDir, "mycroft.conf"), url, uid, gid); err != nil {
		return fmt.Errorf("runtime ovos: mycroft.conf: %w", err)
	}
	if err := l.linkSettings(skill, confDir, uid, gid); err != nil {
		return fmt.Errorf("runtime ovos: settings: %w", err)
	}
	return nil
}

// ownerOf is the uid:gid files of id belong to; -1 keeps the agent's.
func ownerOf(id *Identity) (uid, gid int) {
	if id == nil {
		return -1, -1
	}
	return int(id.UID), int(id.GID)
}

// linkSettings points <confDir>/skills/<skill> at the skill's settings
// directory (created when missing), replacing whatever was there.
func (l *Launcher) linkSettings(skill, confDir string, uid, gid int) error {
	if l.cfg.SettingsRoot == "" {
		return nil
	}
	target := filepath.Join(l.cfg.SettingsRoot, skill)
	if err := os.MkdirAll(target, 0o700); err != nil {
		return err
	}
	skills := filepath.Join(confDir, "skills")
	if err := mkdirOwned(confDir, skills, uid, gid); err != nil {
		return err
	}
	link := filepath.Join(skills, skill)
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	if err := os.RemoveAll(link); err != nil {
		return err
	}
	if err := os.Symlink(target, link); err != nil {
		return err
	}
	return os.Lchown(link, uid, gid)
}

// mkdirOwned creates dir and its missing parents below base (0700), owned
// by uid:gid (-1 keeps the agent's).
func mkdirOwned(base, dir string, uid, gid int) error {
	rel, err := filepath.Rel(base, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("%s is not inside %s", dir, base)
	}
	cur := base
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if part == "." {
			continue
		}
		cur = filepath.Join(cur, part)
		if err := os.Mkdir(cur, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := os.Lchown(cur, uid, gid); err != nil {
			return err
		}
	}
	return nil
}
