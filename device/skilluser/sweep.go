package skilluser

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// sweepPasses bounds Sweep: an orphan that forks while it is being killed is
// caught by the next pass; a fork bomb gets at most this many.
const sweepPasses = 10

// Sweep sends SIGKILL to every process running under a uid of the range (any
// of its real, effective, saved or filesystem uid) and returns how many it
// killed. Only the agent starts processes under these uids, so at start-up
// every such process is an orphan of a previous run (its skills died with
// it, their descendants did not). It passes over /proc until a pass finds
// nothing.
func (a *Accounts) Sweep() (int, error) { return sweep("/proc", a.cfg.Range) }

func sweep(proc string, r Range) (int, error) {
	killed := 0
	for range sweepPasses {
		pids, err := pidsInRange(proc, r)
		if err != nil || len(pids) == 0 {
			return killed, err
		}
		for _, pid := range pids {
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				killed++
			} else if !errors.Is(err, syscall.ESRCH) {
				return killed, err
			}
		}
	}
	return killed, nil
}

// pidsInRange lists the processes (not zombies, which are already dead)
// with a uid in r.
func pidsInRange(proc string, r Range) ([]int, error) {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(proc, e.Name(), "status"))
		if err != nil {
			continue // it exited
		}
		if live, uids := statusUIDs(b); live && anyIn(r, uids) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// statusUIDs reads the State and Uid lines of /proc/<pid>/status.
func statusUIDs(b []byte) (live bool, uids []uint32) {
	live = true
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		switch k {
		case "State":
			live = !strings.HasPrefix(strings.TrimSpace(v), "Z")
		case "Uid":
			for _, f := range strings.Fields(v) {
				if n, err := strconv.ParseUint(f, 10, 32); err == nil {
					uids = append(uids, uint32(n))
				}
			}
		}
	}
	return live, uids
}

func anyIn(r Range, ids []uint32) bool {
	for _, id := range ids {
		if r.Contains(id) {
			return true
		}
	}
	return false
}
