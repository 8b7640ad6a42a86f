package process

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/device/ovosconf"
	"github.com/chorus-edge/chorus/device/ovosrt"
)

// SharedHostID names the shared host's own account and home (under uid
// isolation it runs as one uid: the skills it hosts trust each other).
const SharedHostID = "chorus.ovos-host"

// SharedHost runs several trusted runtime ovos skills in one launcher
// process, as ovos-core does with websocket.shared_connection false: each
// skill keeps its own bus connection on its own drop-in route, so the
// broker still knows which skill says what, but they share one Python
// interpreter (and its memory) and one uid. docs/ovos.md.
//
// The host is `<launcher> --host`, started with the first skill and
// stopped with the last. The agent drives it over a socket on fd 3, one
// line per command:
//
//	agent -> host   load <skill id> <mycroft.conf> <site dir>
//	agent -> host   unload <skill id>
//	host -> agent   unloaded <skill id>
//
// Each hosted skill is a HostedSkill, which the skill manager sees as the
// skill's process: Stop unloads it; it is done when the host says it
// unloaded it, or when the host exits.
type SharedHost struct {
	l *Launcher

	mu  sync.Mutex // guards run
	run *hostRun   // the running host; nil before the first skill and after the last
}

// hostRun is one host process and what it hosts.
type hostRun struct {
	proc *Process
	ctl  *os.File // the agent's end of the control socket

	mu     sync.Mutex // guards skills and writes to ctl
	skills map[string]*HostedSkill
}

// HostedSkill is one skill in the shared host.
type HostedSkill struct {
	id   string
	host *SharedHost
	run  *hostRun
	done chan struct{}
	once sync.Once
	err  error // written once before done is closed
}

// NewSharedHost returns the shared host of l's runtime ovos skills.
func NewSharedHost(l *Launcher) *SharedHost { return &SharedHost{l: l} }

// Start loads s into the host, starting the host when none runs.
func (h *SharedHost) Start(s discovery.Skill) (*HostedSkill, error) {
	if s.Runtime != discovery.RuntimeOVOS {
		return nil, fmt.Errorf("start skill %s: the shared host runs runtime ovos skills only", s.ID)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	run := h.run
	if run == nil || run.exited() {
		var err error
		if run, err = h.startHost(); err != nil {
			return nil, fmt.Errorf("start skill %s: shared host: %w", s.ID, err)
		}
		h.run = run
	}
	conf, err := h.prepare(s, run)
	if err != nil {
		return nil, fmt.Errorf("start skill %s: shared host: %w", s.ID, err)
	}
	site := filepath.Join(s.Dir, ovosrt.SiteDir)
	if strings.ContainsAny(conf+site, " \t\n") {
		return nil, fmt.Errorf("start skill %s: shared host: paths with blanks cannot cross its line protocol (%q, %q); use a data dir and skill root without blanks, or run the skill on its own", s.ID, conf, site)
	}
	hs := &HostedSkill{id: s.ID, host: h, run: run, done: make(chan struct{})}
	run.mu.Lock()
	defer run.mu.Unlock()
	if old := run.skills[s.ID]; old != nil {
		return nil, fmt.Errorf("start skill %s: already in the shared host", s.ID)
	}
	if _, err := fmt.Fprintf(run.ctl, "load %s %s %s\n", s.ID, conf, site); err != nil {
		return nil, fmt.Errorf("start skill %s: shared host: %w", s.ID, err)
	}
	run.skills[s.ID] = hs
	return hs, nil
}

// startHost starts `<launcher> --host` with its control socket on fd 3.
func (h *SharedHost) startHost() (*hostRun, error) {
	l := h.l
	o := l.cfg.OVOS
	if o.Launcher == "" {
		return nil, errors.New("runtime ovos needs skills.ovos.launcher: the path of ovos-skill-launcher in the satellite's OVOS venv")
	}
	id, err := l.identity(SharedHostID)
	if err != nil {
		return nil, err
	}
	home, err := l.ovosHome(SharedHostID, id)
	if err != nil {
		return nil, err
	}
	host := discovery.Skill{ID: SharedHostID, Dir: home, Runtime: discovery.RuntimeOVOS}
	env, err := l.ovosEnv(host, id, home)
	if err != nil {
		return nil, err
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "ovos-host-ctl"), os.NewFile(uintptr(fds[1]), "ovos-host-ctl")
	cmd, err := l.launcherCmd(home, env, id, "--host")
	if err != nil {
		ours.Close()
		theirs.Close()
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{theirs}
	p, err := start(SharedHostID, cmd, l.cfg, l.recs)
	theirs.Close()
	if err != nil {
		ours.Close()
		return nil, err
	}
	run := &hostRun{proc: p, ctl: ours, skills: map[string]*HostedSkill{}}
	go run.read()
	go run.watch()
	return run, nil
}

// prepare writes s's mycroft.conf (its own route) into the host's home
// and links its settings directory where the host's OVOS keeps it.
func (h *SharedHost) prepare(s discovery.Skill, run *hostRun) (string, error) {
	l := h.l
	url := ""
	if l.cfg.OVOS.SkillURL != nil {
		url = l.cfg.OVOS.SkillURL(s.ID)
	}
	if url == "" {
		return "", errors.New("runtime ovos needs the OVOS websocket drop-in (websocket.disabled is set, or --ws-listen off)")
	}
	id, err := l.identity(SharedHostID)
	if err != nil {
		return "", err
	}
	home, err := l.ovosHome(SharedHostID, id)
	if err != nil {
		return "", err
	}
	uid, gid := ownerOf(id)
	dir := filepath.Join(home, "skills", s.ID)
	if err := mkdirOwned(home, dir, uid, gid); err != nil {
		return "", err
	}
	conf := filepath.Join(dir, "mycroft.conf")
	if err := ovosconf.Write(conf, url, uid, gid); err != nil {
		return "", err
	}
	if l.cfg.SettingsRoot != "" {
		if err := os.MkdirAll(filepath.Join(l.cfg.SettingsRoot, s.ID), 0o700); err != nil {
			return "", err
		}
		if err := os.Chown(filepath.Join(l.cfg.SettingsRoot, s.ID), uid, gid); err != nil {
			return "", err
		}
	}
	confDir := filepath.Join(home, ".config", "mycroft")
	if err := mkdirOwned(home, confDir, uid, gid); err != nil {
		return "", err
	}
	if err := l.linkSettings(s.ID, confDir, uid, gid); err != nil {
		return "", err
	}
	return conf, nil
}

// read takes the host's answers.
func (r *hostRun) read() {
	sc := bufio.NewScanner(r.ctl)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "unloaded "); ok {
			r.mu.Lock()
			hs := r.skills[id]
			delete(r.skills, id)
			r.mu.Unlock()
			if hs != nil {
				hs.finish(nil)
			}
		}
	}
}

// watch ends every hosted skill when the host exits.
func (r *hostRun) watch() {
	<-r.proc.Done()
	err := r.proc.ExitErr()
	if err == nil {
		err = errors.New("exit status 0")
	}
	r.mu.Lock()
	skills := r.skills
	r.skills = map[string]*HostedSkill{}
	r.mu.Unlock()
	for _, hs := range skills {
		hs.finish(fmt.Errorf("shared host exited: %w", err))
	}
	r.ctl.Close()
}

func (r *hostRun) exited() bool {
	select {
	case <-r.proc.Done():
		return true
	default:
		return false
	}
}

func (hs *HostedSkill) finish(err error) {
	hs.once.Do(func() {
		hs.err = err
		close(hs.done)
	})
}

// Done is closed once the skill is unloaded or the host exited.
func (hs *HostedSkill) Done() <-chan struct{} { return hs.done }

// ExitErr is nil for an unload the agent asked for, else why the host ended.
func (hs *HostedSkill) ExitErr() error {
	<-hs.done
	return hs.err
}

// Tail is the host's last output lines.
func (hs *HostedSkill) Tail() []string { return hs.run.proc.Tail() }

// PID is the host's pid.
func (hs *HostedSkill) PID() int { return hs.run.proc.PID() }

// Stop unloads the skill and waits for the host to confirm; the host itself
// stops with its last skill. Idempotent. A host that does not confirm
// within ctx is stopped with every skill it hosts: one skill cannot be
// killed alone.
func (hs *HostedSkill) Stop(ctx context.Context) error {
	r := hs.run
	r.mu.Lock()
	_, hosted := r.skills[hs.id]
	if hosted {
		if _, err := fmt.Fprintf(r.ctl, "unload %s\n", hs.id); err != nil {
			hosted = false
		}
	}
	r.mu.Unlock()
	var err error
	if hosted {
		select {
		case <-hs.done:
		case <-ctx.Done():
			err = fmt.Errorf("shared host did not unload %s: %w; stopping the host", hs.id, ctx.Err())
			_ = r.proc.Stop(context.Background())
			<-hs.done
		}
	}
	// The host stops with its last skill; a Start after this point starts
	// a new one (it takes host.mu, and the run is no longer current).
	hs.host.mu.Lock()
	r.mu.Lock()
	empty := len(r.skills) == 0
	r.mu.Unlock()
	if empty && hs.host.run == r {
		hs.host.run = nil
	}
	hs.host.mu.Unlock()
	if empty {
		if serr := r.proc.Stop(ctx); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}
