package process

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/chorus-edge/chorus/configs"
)

// record identifies one running skill's process group across an agent
// restart: the leader's pid (the group id), its start time in clock ticks
// since boot, and the boot it ran in. A pid alone could be recycled by then.
type record struct {
	PID    int    `json:"pid"`
	Start  uint64 `json:"start"`
	BootID string `json:"boot_id"`
	Skill  string `json:"skill"`
}

// records is the file of running skills (Config.Records). mu guards live and
// serialises the writes: a record must be on disk before an agent crash could
// orphan its group.
type records struct {
	path string
	mu   sync.Mutex
	live map[int]record
}

func newRecords(path string) *records {
	if path == "" {
		return nil
	}
	return &records{path: path, live: map[int]record{}}
}

// add records a started skill. A failure is returned for the log; the skill
// still runs (it still dies with the agent; only its descendants could not
// be reaped after a crash).
func (r *records) add(skill string, pid int) error {
	if r == nil {
		return nil
	}
	start, err := startTime(pid)
	if err != nil {
		return fmt.Errorf("record skill process %d: %w", pid, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live[pid] = record{PID: pid, Start: start, BootID: bootID(), Skill: skill}
	return r.saveLocked()
}

func (r *records) remove(pid int) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.live, pid)
	return r.saveLocked()
}

func (r *records) saveLocked() error {
	list := make([]record, 0, len(r.live))
	for _, rec := range r.live {
		list = append(list, rec)
	}
	b, err := json.Marshal(list)
	if err != nil {
		return err
	}
	if err := configs.WriteFileAtomic(r.path, b, 0o600); err != nil {
		return fmt.Errorf("save skill records: %w", err)
	}
	return nil
}

// ReapOrphans kills what a previous run of the agent left behind: the
// process group of every skill it recorded as running. Call it once at
// start, before the first Start. A skill's own process dies with its agent
// (parent-death signal); what it started does not, and stays in its group.
// A record of another boot, or whose group leader's pid now belongs to a
// younger process, names nothing of ours and is dropped. It returns the
// number of groups signalled.
func (l *Launcher) ReapOrphans() (int, error) {
	r := l.recs
	if r == nil {
		return 0, nil
	}
	b, err := os.ReadFile(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reap orphaned skills: %w", err)
	}
	var old []record
	if err := json.Unmarshal(b, &old); err != nil {
		l.cfg.Logger.Warn("unreadable skill records dropped", "path", r.path, "err", err)
	}
	n := 0
	for _, rec := range old {
		if reapGroup(rec) {
			l.cfg.Logger.Warn("killed the orphaned processes of a previous run", "skill_id", rec.Skill, "pgid", rec.PID)
			n++
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return n, r.saveLocked()
}

// reapGroup sends SIGKILL to rec's process group if it is still rec's: same
// boot, and its leader either gone (its pid stays reserved while the group
// has members, so no other process holds it) or still the recorded one.
func reapGroup(rec record) bool {
	if rec.PID <= 1 || rec.BootID == "" || rec.BootID != bootID() {
		return false
	}
	if start, err := startTime(rec.PID); err == nil && start != rec.Start {
		return false // the pid was recycled by a process of its own
	}
	return syscall.Kill(-rec.PID, syscall.SIGKILL) == nil
}

// statFields returns the fields of /proc/<pid>/stat after the command name
// (field 3, the state, is index 0).
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	return strings.Fields(string(b[i+1:])), nil
}

// startTime is field 22 of /proc/<pid>/stat: when the process started, in
// clock ticks after boot.
func startTime(pid int) (uint64, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// bootID names this boot; "" when the kernel does not say.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
