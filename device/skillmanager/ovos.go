package skillmanager

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/gateway/envelope"
)

// DefaultOVOSLoadTimeout bounds a runtime ovos skill's load, from its
// launcher's start to its mycroft.skills.loaded (skills.ovos.load_timeout):
// the launcher waits for mycroft.ready first, and a Python skill's imports
// take seconds on a Raspberry Pi.
const DefaultOVOSLoadTimeout = 120 * time.Second

// A runtime ovos skill (docs/ovos.md) is run by ovos-workshop's
// ovos-skill-launcher, which speaks for itself on the bus through the
// skill's own websocket route:
//   - its readiness is the launcher's own mycroft.skills.loaded naming it
//     (skill_launcher.py SkillLoader._communicate_load_status), seen on the
//     skill's own connection (ObserveSkillMessage), and its
//     mycroft.skills.loading_failure fails the load at once;
//   - the manager announces neither event for it: exactly one
//     mycroft.skills.loaded per load, the launcher's;
//   - activate/deactivate are the manager's alone: it stops and starts the
//     launcher, and the drop-in keeps skillmanager.* from the skill's
//     connection, so the launcher's own handlers (SkillContainer.do_load,
//     do_unload) never run;
//   - on SIGTERM the launcher unloads its skill itself and emits its
//     detach_skill (SkillContainer.run: wait_for_exit_signal, unload), so
//     the manager emits detach_skill for it only when it did not exit
//     cleanly.

// ovosLoad is what an attempt of a runtime ovos skill learns from its
// launcher.
type ovosLoad struct {
	once   sync.Once
	failed chan struct{} // closed on the launcher's mycroft.skills.loading_failure
}

func (o *ovosLoad) markFailed() { o.once.Do(func() { close(o.failed) }) }

// ovosProcess marks the process of a runtime ovos skill.
type ovosProcess struct{ Process }

// isOVOS reports whether s runs under the OVOS runtime.
func isOVOS(s discovery.Skill) bool { return s.Runtime == discovery.RuntimeOVOS }

// ObserveSkillMessage takes a message that skill sent on its own websocket
// connection (the drop-in's OnSkillFrame: the sender is known, unlike on
// the bus). A runtime ovos skill's launcher reports its load with it.
func (m *Manager) ObserveSkillMessage(skill string, msg envelope.Message) {
	if msg.Type != TypeSkillsLoaded && msg.Type != TypeLoadingFailure {
		return
	}
	if id, _ := msg.Data["id"].(string); id != skill {
		return // a launcher speaks for its own skill only
	}
	m.mu.Lock()
	a := m.loading[skill]
	m.mu.Unlock()
	if a == nil || a.ovos == nil {
		return
	}
	if msg.Type == TypeSkillsLoaded {
		a.markReady()
		return
	}
	a.ovos.markFailed()
}

// awaitOVOS waits for the launcher's report on a's load.
func (m *Manager) awaitOVOS(ctx context.Context, a *attempt, proc Process) error {
	timeout := m.cfg.After(m.cfg.OVOSLoadTimeout)
	select {
	case <-a.ready:
		return nil
	case <-a.ovos.failed:
		return errLauncherFailed
	case <-proc.Done():
		return fmt.Errorf("launcher exited before the skill loaded: %s", exitReport(proc))
	case <-timeout:
		return fmt.Errorf("launcher did not report mycroft.skills.loaded within %s", m.cfg.OVOSLoadTimeout)
	case <-ctx.Done():
		return errStopping
	}
}

// errLauncherFailed is a load the launcher itself reported failed (it
// emitted mycroft.skills.loading_failure, so the manager does not).
var errLauncherFailed = fmt.Errorf("the launcher reported mycroft.skills.loading_failure (see the skill's log)")

// detachOwed reports whether the manager must emit detach_skill for a
// stopped process: always, except for a launcher that exited cleanly (it
// unloaded its skill and emitted its own).
func detachOwed(proc Process) bool {
	if _, ok := proc.(ovosProcess); !ok {
		return true
	}
	select {
	case <-proc.Done():
		return proc.ExitErr() != nil
	default:
		return true
	}
}
