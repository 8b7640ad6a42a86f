package process_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/device/process"
)

func ovosSkill(t *testing.T, id string) discovery.Skill {
	t.Helper()
	dir := filepath.Join(t.TempDir(), id)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+id+"\ndescription: x\nruntime: ovos\n---\n"), 0o644)
	cat, err := discovery.Discover(discovery.Config{Installed: filepath.Dir(dir)})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := cat.Get(id)
	if !ok || !s.Valid {
		t.Fatalf("skill %+v", s)
	}
	return s
}

// A runtime ovos skill runs `<launcher> <skill id>` with only what OVOS
// needs: its own home and XDG directories, a mycroft.conf there holding
// its own drop-in route (0600), its settings directory linked where OVOS
// keeps settings.json, PYTHONPATH with its site directory, the passed
// variables and skills.ovos.env; none of the agent's CHORUS_* or MQTT
// credentials.
func TestOVOSLauncherEnvironment(t *testing.T) {
	cfg, _ := testConfig(t)
	launcher := filepath.Join(t.TempDir(), "ovos-skill-launcher")
	script := `#!/bin/sh
echo "args $*"
env | sort | sed 's/^/env /'
mkdir -p "$XDG_CONFIG_HOME/mycroft/skills/$1"
echo '{"a": 1}' > "$XDG_CONFIG_HOME/mycroft/skills/$1/settings.json"
echo done
exec sleep 600
`
	if err := os.WriteFile(launcher, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	url := "ws://127.0.0.1:8181/core/skill/hello.ovos/tok"
	cfg.OVOS = process.OVOS{Launcher: launcher, Root: root, PassEnv: []string{"PATH", "CHORUS_SECRET"},
		Env: []string{"FOO=bar", "PYTHONPATH=/extra"}, SkillURL: func(string) string { return url }}
	cfg.Getenv = func(k string) string {
		return map[string]string{"PATH": "/usr/bin:/bin", "CHORUS_SECRET": "x", "SECRET": "y"}[k]
	}
	cfg.TailLines = 100
	s := ovosSkill(t, "hello.ovos")
	p, err := process.NewLauncher(cfg).Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(t.Context()) })
	waitTail(t, p, "done")
	home := filepath.Join(root, "hello.ovos")
	var env []string
	for _, l := range p.Tail() {
		if v, ok := strings.CutPrefix(l, "env "); ok {
			env = append(env, v)
		}
	}
	want := []string{
		"FOO=bar", "HOME=" + home, "PATH=/usr/bin:/bin", "PYTHONPATH=" + filepath.Join(s.Dir, "site") + ":/extra",
		"XDG_CACHE_HOME=" + home + "/.cache", "XDG_CONFIG_HOME=" + home + "/.config",
		"XDG_DATA_HOME=" + home + "/.local/share", "XDG_STATE_HOME=" + home + "/.local/state",
	}
	// sh adds PWD (and may add SHLVL, _); they are not the agent's.
	env = slices.DeleteFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "PWD=") || strings.HasPrefix(kv, "SHLVL=") || strings.HasPrefix(kv, "_=") || strings.HasPrefix(kv, "OLDPWD=")
	})
	if !slices.Equal(env, want) {
		t.Errorf("environment\n got %q\nwant %q", env, want)
	}
	if !slices.Contains(p.Tail(), "args hello.ovos") {
		t.Errorf("args: %q", p.Tail())
	}
	conf := filepath.Join(home, ".config", "mycroft", "mycroft.conf")
	b, err := os.ReadFile(conf)
	if err != nil || !strings.Contains(string(b), `"route": "/core/skill/hello.ovos/tok"`) || !strings.Contains(string(b), `"port": 8181`) {
		t.Errorf("mycroft.conf: %v %s", err, b)
	}
	if st, err := os.Stat(conf); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mycroft.conf mode: %v %v", st.Mode(), err)
	}
	// settings.json written where OVOS keeps it is the agent's file.
	got, err := os.ReadFile(filepath.Join(cfg.SettingsRoot, "hello.ovos", "settings.json"))
	if err != nil || strings.TrimSpace(string(got)) != `{"a": 1}` {
		t.Errorf("settings in the settings root: %v %q", err, got)
	}
}

func TestOVOSLauncherRefusals(t *testing.T) {
	cfg, _ := testConfig(t)
	s := ovosSkill(t, "hello.ovos")
	if _, err := process.NewLauncher(cfg).Start(s); err == nil || !strings.Contains(err.Error(), "skills.ovos.launcher") {
		t.Errorf("no launcher: %v", err)
	}
	cfg.OVOS = process.OVOS{Launcher: "/bin/true", Root: t.TempDir()}
	if _, err := process.NewLauncher(cfg).Start(s); err == nil || !strings.Contains(err.Error(), "websocket drop-in") {
		t.Errorf("no drop-in: %v", err)
	}
}
