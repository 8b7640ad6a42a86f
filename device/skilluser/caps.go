package skilluser

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Capability numbers (linux/capability.h) the agent needs to run skills under
// their own uids.
const (
	CapChown  = 0 // chown a skill's home and settings directory to its uid
	CapKill   = 5 // stop skills and sweep orphans running under other uids
	CapSetGID = 6 // setgroups, setresgid in the launcher
	CapSetUID = 7 // setresuid in the launcher
)

// Needed lists the capabilities uid isolation needs, by name.
var Needed = map[int]string{CapChown: "CAP_CHOWN", CapKill: "CAP_KILL", CapSetGID: "CAP_SETGID", CapSetUID: "CAP_SETUID"}

// Caps are a process's capability sets, one bit per capability.
type Caps struct {
	Inheritable, Permitted, Effective, Bounding, Ambient uint64
}

// Any reports whether the process holds any capability it could pass on:
// permitted, inheritable or ambient.
func (c Caps) Any() bool { return c.Permitted|c.Inheritable|c.Ambient != 0 }

// Missing names the capabilities of Needed that are not effective, sorted.
func (c Caps) Missing() []string {
	var out []string
	for _, n := range []int{CapChown, CapKill, CapSetGID, CapSetUID} {
		if c.Effective&(1<<n) == 0 {
			out = append(out, Needed[n])
		}
	}
	return out
}

// ReadCaps reads the capability sets of process pid ("self" for this one)
// from /proc.
func ReadCaps(pid string) (Caps, error) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return Caps{}, fmt.Errorf("read capabilities: %w", err)
	}
	return parseCaps(b)
}

func parseCaps(status []byte) (Caps, error) {
	var c Caps
	fields := map[string]*uint64{
		"CapInh": &c.Inheritable, "CapPrm": &c.Permitted, "CapEff": &c.Effective,
		"CapBnd": &c.Bounding, "CapAmb": &c.Ambient,
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		dst, want := fields[k]
		if !ok || !want {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			return Caps{}, fmt.Errorf("read capabilities: %s %q: %w", k, v, err)
		}
		*dst = n
		delete(fields, k)
	}
	delete(fields, "CapAmb") // absent before Linux 4.3, which has no ambient set
	for k := range fields {
		return Caps{}, fmt.Errorf("read capabilities: /proc status has no %s line", k)
	}
	return c, nil
}
