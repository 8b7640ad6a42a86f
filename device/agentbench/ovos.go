package agentbench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// OVOSModule is the Python module of the small OVOS-style skill that
// MakeOVOSSkills installs: a skill class built with the bus and its id (as
// ovos-workshop's PluginSkillLoader builds one), which registers a
// padatious intent and answers it with speak. It speaks through
// ovos-bus-client's Message when that is importable (the real launcher),
// else through the stand-in's bus. HELLO_SKILL_FAIL in its environment
// makes its constructor raise.
const OVOSModule = "hello_skill"

const ovosModuleSource = `import os

try:
    from ovos_bus_client.message import Message
except ImportError:
    Message = None


def _emit(bus, msg_type, data, context):
    if Message is not None:
        bus.emit(Message(msg_type, data, context))
    else:
        bus.emit(msg_type, data, context)


class HelloWorldSkill:
    name = "Hello World"

    def __init__(self, bus, skill_id, **_):
        if os.environ.get("HELLO_SKILL_FAIL"):
            raise RuntimeError("HELLO_SKILL_FAIL is set")
        self.bus, self.skill_id = bus, skill_id
        self.intent = skill_id + ":HelloWorldIntent.intent"
        _emit(bus, "padatious:register_intent",
              {"name": self.intent, "lang": "en-US", "samples": ["hello world"]},
              {"skill_id": skill_id})
        bus.on(self.intent, self.handle_hello)

    def handle_hello(self, message):
        _emit(self.bus, "speak", {"utterance": "Hello world", "lang": "en-US"}, {"skill_id": self.skill_id})

    def shutdown(self):
        remove = getattr(self.bus, "remove_all_listeners", None) or getattr(self.bus, "remove_all", None)
        if remove:
            remove(self.intent)
`

// OVOSSource is the module's source, for a source tree to pack.
func OVOSSource() string { return ovosModuleSource }

// OVOSDist is the distribution name of the skill packaged for skillID.
func OVOSDist(skillID string) string {
	return "hello-" + strings.NewReplacer(".", "-", "_", "-").Replace(skillID)
}

// WriteOVOSSite installs the skill for skillID into site the way pip
// leaves a wheel: the module and a dist-info directory whose
// entry_points.txt names skillID in the opm.skills group.
func WriteOVOSSite(site, skillID string) error {
	dist := strings.ReplaceAll(OVOSDist(skillID), "-", "_")
	info := filepath.Join(site, dist+"-1.0.0.dist-info")
	files := map[string]string{
		filepath.Join(site, OVOSModule, "__init__.py"): ovosModuleSource,
		filepath.Join(info, "METADATA"):                "Metadata-Version: 2.1\nName: " + OVOSDist(skillID) + "\nVersion: 1.0.0\n",
		filepath.Join(info, "entry_points.txt"):        "[opm.skills]\n" + skillID + " = " + OVOSModule + ":HelloWorldSkill\n",
	}
	for path, body := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// WriteOVOSSkill writes a runtime ovos skill directory for skillID under
// root, with the skill installed in its site directory; it returns the
// directory.
func WriteOVOSSkill(root, skillID string) (string, error) {
	dir := filepath.Join(root, skillID)
	doc := "---\nname: " + skillID + "\ndescription: The hello-world OVOS skill, run by ovos-skill-launcher.\nruntime: ovos\npython_package: " + OVOSDist(skillID) + "\n---\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(doc), 0o644); err != nil {
		return "", err
	}
	return dir, WriteOVOSSite(filepath.Join(dir, "site"), skillID)
}

// MakeOVOSSkills writes n runtime ovos skills under root and returns their ids.
func MakeOVOSSkills(root string, n int) ([]string, error) {
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("bench%03d.ovos", i)
		if _, err := WriteOVOSSkill(root, ids[i]); err != nil {
			return nil, err
		}
	}
	return ids, nil
}
