// Package agentbench measures the agent's footprint for `chorus bench
// agent`: Run starts `chorus agent` as a child (AgentCommand, injected by
// cmd/chorus) with trivial skills against a broker in this process and
// reports start to ready, discovery and rescan times and idle memory;
// RunOVOS does the same for runtime ovos skills under a launcher. The
// pieces are exported for the other benches: trees of trivial or OVOS
// skills, discovery timing, a process's memory and CPU time and its
// children's from /proc, and the machine's load.
package agentbench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/device/discovery"
)

// MakeSkills writes n skills under root (bench000000 ... ), each a SKILL.md
// and an executable run.sh of execSize bytes that sleeps (ready on start, so
// it needs nothing). It returns their ids.
func MakeSkills(root string, n, execSize int) ([]string, error) {
	body := "#!/bin/sh\nexec sleep 100000\n"
	if pad := execSize - len(body); pad > 0 {
		line := "# chorus bench padding line, never run\n"
		body += strings.Repeat(line, pad/len(line)+1)[:pad-1] + "\n"
	}
	ids := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("bench%06d.skill", i)
		ids[i] = id
		dir := filepath.Join(root, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		md := fmt.Sprintf("---\nname: %s\ndescription: Does nothing.\nversion: 1.0.0\nexec: run.sh\nready: on-start\n---\n", id)
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte(body), 0o755); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// TimeDiscovery runs the agent's discovery over root (as a user root) and
// returns how long it took and how many valid skills it found.
func TimeDiscovery(root string) (time.Duration, int, error) {
	start := time.Now()
	cat, err := discovery.Discover(discovery.Config{User: []string{root}})
	el := time.Since(start)
	if err != nil {
		return el, 0, err
	}
	n := 0
	for _, e := range cat.Entries() {
		if e.Valid {
			n++
		}
	}
	return el, n, nil
}

// Memory is a process's resident memory, from /proc/<pid>/status.
type Memory struct {
	RSSKiB  int64 `json:"vm_rss_kib"`   // VmRSS: resident now
	HWMKiB  int64 `json:"vm_hwm_kib"`   // VmHWM: peak resident
	AnonKiB int64 `json:"rss_anon_kib"` // RssAnon: heap, stacks, runtime
	FileKiB int64 `json:"rss_file_kib"` // RssFile: mapped pages of the binary (and other files)
}

// ProcMemory reads VmRSS and VmHWM of pid (0 = this process).
func ProcMemory(pid int) (Memory, error) {
	p := "/proc/self/status"
	if pid > 0 {
		p = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmRSS":
			m.RSSKiB = n
		case "VmHWM":
			m.HWMKiB = n
		case "RssAnon":
			m.AnonKiB = n
		case "RssFile":
			m.FileKiB = n
		}
	}
	if m.HWMKiB == 0 {
		return m, errors.New("no VmHWM in " + p)
	}
	return m, nil
}

// CPUTime returns the user and system CPU time pid has used (utime and
// stime of /proc/<pid>/stat, at the usual 100 ticks per second).
func CPUTime(pid int) (user, sys time.Duration, err error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, 0, err
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64) // field 14, counted after the comm's ")"
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const tick = 10 * time.Millisecond
	return time.Duration(ut) * tick, time.Duration(st) * tick, nil
}

// statFields returns the fields of /proc/<pid>/stat after "(comm)": f[0] is
// the state, f[1] the parent pid.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return nil, errors.New("short stat")
	}
	return f, nil
}

// Children returns the pids whose parent is pid.
func Children(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := statFields(c)
		if err != nil {
			continue
		}
		if pp, _ := strconv.Atoi(f[1]); pp == pid {
			out = append(out, c)
		}
	}
	return out
}

// ChildrenMemory sums VmRSS of pid's children (the skill processes).
func ChildrenMemory(pid int) (n int, rssKiB int64) {
	for _, c := range Children(pid) {
		if m, err := ProcMemory(c); err == nil {
			n++
			rssKiB += m.RSSKiB
		}
	}
	return n, rssKiB
}

// LoadAvg is /proc/loadavg's first three fields, printed next to every
// figure (a figure means little without the machine's load); "n/a" when
// it cannot be read.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}
