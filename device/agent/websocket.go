package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/device/ovosconf"
	"github.com/chorus-edge/chorus/device/ovosrt"
	"github.com/chorus-edge/chorus/device/process"
	"github.com/chorus-edge/chorus/device/skillmanager"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/wsbus"
)

// wsSecretFile keys the drop-in's routes; it never leaves the data dir, so
// the routes survive restarts and OVOS services keep their mycroft.conf.
const wsSecretFile = "websocket.secret"

// startWebsocket starts the OVOS websocket drop-in (BUS.md §3) with its
// routes keyed by the persisted secret: the device's OVOS services on the
// services route (written to websocket.services_config for them), each
// skill on its own route relayed with its own credentials, and the trusted
// PHAL answer taken only from the services (connectivity.PHAL).
func (a *Agent) startWebsocket(ctx context.Context) error {
	secret, err := loadSecret(filepath.Join(a.cfg.DataDir, wsSecretFile))
	if err != nil {
		return fmt.Errorf("websocket bus: %w", err)
	}
	uids, err := lookupUIDs(a.cfg.WSServicesUsers)
	if err != nil {
		return fmt.Errorf("websocket.services_users: %w", err)
	}
	a.ws, err = wsbus.Start(ctx, wsbus.Config{
		Transport: a.mqtt, Device: a.cfg.Device, Listen: a.cfg.WSListen, Route: a.cfg.WSRoute,
		Secret: secret, ServicesUIDs: uids, DialSkill: a.dialSkill, OnServicesFrame: a.phal.Observe,
		OnSkillFrame: a.manager.ObserveSkillMessage, HideFromSkills: hiddenFromSkills,
		MaxFrame: a.cfg.WSMaxSize, MaxPacket: a.cfg.WSMaxPacket, Logger: a.log,
	})
	if errors.Is(err, syscall.EADDRINUSE) {
		// A second agent on one machine, or OVOS's own messagebus.
		return fmt.Errorf("%w: another agent or OVOS messagebus already serves %s; give this agent another address with --ws-listen 127.0.0.1:PORT (config websocket.host and websocket.port), or turn the drop-in off with --ws-listen off",
			err, a.cfg.WSListen)
	}
	if err != nil {
		return err
	}
	return a.writeServicesConfig(uids)
}

// writeServicesConfig writes the services' mycroft.conf, owned by the first
// services user (or the agent's), mode 0600.
func (a *Agent) writeServicesConfig(uids []uint32) error {
	path := a.cfg.WSServicesConfig
	if path == "" {
		a.log.Warn("no websocket.services_config: the device's OVOS services have no route to the drop-in (docs/ovos.md)")
		return nil
	}
	uid, gid := -1, -1
	if len(uids) > 0 {
		uid = int(uids[0])
		if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
			gid, _ = strconv.Atoi(u.Gid)
		}
	}
	if err := ovosconf.Write(path, a.ws.ServicesURL(), uid, gid); err != nil {
		return fmt.Errorf("websocket.services_config: %w", err)
	}
	a.log.Info("OVOS services' websocket route written", "path", path, "uid", uid)
	return nil
}

// dialSkill is the drop-in's DialSkill: the skill's own MQTT connection,
// with the credentials its process gets, under a client id of its own so
// it never takes over the skill's other connections.
func (a *Agent) dialSkill(ctx context.Context, skill string) (wsbus.SkillTransport, error) {
	username, password, err := a.launcher.Credentials(skill)
	if err != nil {
		return nil, err
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	return bus.DialMQTT(ctx, bus.MQTTConfig{
		URL: a.cfg.MQTTURL, ClientID: username + "/ws-" + hex.EncodeToString(suffix),
		Username: username, Password: password, CleanStart: true,
		Logger: a.log.With("component", "wsbus", "skill_id", skill),
	})
}

// hiddenFromSkills are the management types the agent alone handles: an
// OVOS launcher would act on them too (ovos-workshop skill_launcher.py
// SkillContainer._connect_to_core subscribes do_load/do_unload), and the
// agent already stops and starts it (docs/ovos.md).
var hiddenFromSkills = []string{skillmanager.TypeActivate, skillmanager.TypeDeactivate, skillmanager.TypeKeep}

// ovosRuntime is the launcher's OVOS runtime (skills.ovos): the skills'
// private homes under the data dir, their drop-in routes.
func (a *Agent) ovosRuntime() process.OVOS {
	o := a.cfg.Skills.OVOS
	keys := make([]string, 0, len(o.Env))
	for k := range o.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		env = append(env, k+"="+o.Env[k])
	}
	return process.OVOS{
		Launcher: o.Launcher, Root: filepath.Join(a.cfg.DataDir, "ovos-homes"), PassEnv: o.PassEnv, Env: env,
		SkillURL: func(skill string) string {
			if a.ws == nil {
				return ""
			}
			return a.ws.SkillURL(skill)
		},
	}
}

// skillLauncher starts each skill as its own process, except the runtime
// ovos skills listed in skills.ovos.shared, which share one host process
// (process.SharedHost).
func (a *Agent) skillLauncher() skillmanager.Launcher {
	own := skillmanager.Launch(a.launcher.Start)
	host := process.NewSharedHost(a.launcher)
	return skillmanager.LauncherFunc(func(s discovery.Skill) (skillmanager.Process, error) {
		if s.Runtime != discovery.RuntimeOVOS || !a.cfg.Skills.OVOS.SharedOVOS(s.ID) {
			return own.Start(s)
		}
		hs, err := host.Start(s)
		if err != nil {
			return nil, err
		}
		return hs, nil
	})
}

// prepareOVOS is the installer's Prepare: a runtime ovos skill's wheels
// are installed offline into its site directory with the OVOS venv's
// python (skills.ovos.python, default the python3 next to the launcher).
func (a *Agent) prepareOVOS(ctx context.Context, s discovery.Skill) error {
	if s.Runtime != discovery.RuntimeOVOS {
		return nil
	}
	return ovosrt.Install(ctx, a.ovosPython(), s.Dir)
}

func (a *Agent) ovosPython() string {
	o := a.cfg.Skills.OVOS
	if o.Python != "" || o.Launcher == "" {
		return o.Python
	}
	return filepath.Join(filepath.Dir(o.Launcher), "python3")
}

// skillEnv gives each skill its own drop-in route (CHORUS_WS_URL).
func (a *Agent) skillEnv(skill string) []string {
	if a.ws == nil {
		return nil
	}
	return []string{process.EnvWSURL + "=" + a.ws.SkillURL(skill)}
}

// askPHAL is the manager's AskPHAL when the drop-in runs: the PHAL plugin is
// one of the device's OVOS services, so its answer comes on their route.
func (a *Agent) askPHAL() func(context.Context) (bool, bool, error) {
	if a.cfg.WSListen == "" {
		return nil // no trusted source of the answer
	}
	return func(ctx context.Context) (bool, bool, error) {
		ans, err := a.phal.Ask(ctx)
		return ans.Network, ans.Internet, err
	}
}

// loadSecret reads the drop-in's secret, creating it (32 random bytes,
// 0600) on first use.
func loadSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil && len(b) >= 32 {
		return b, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	b = make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	return b, configs.WriteFileAtomic(path, b, 0o600)
}

// lookupUIDs resolves user names or numeric uids.
func lookupUIDs(users []string) ([]uint32, error) {
	var out []uint32
	for _, name := range users {
		if n, err := strconv.ParseUint(name, 10, 32); err == nil {
			out = append(out, uint32(n))
			continue
		}
		u, err := user.Lookup(name)
		if err != nil {
			return nil, fmt.Errorf("%q: %w (give a user name or a uid)", name, err)
		}
		n, err := strconv.ParseUint(u.Uid, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%q: uid %q: %w", name, u.Uid, err)
		}
		out = append(out, uint32(n))
	}
	return out, nil
}
