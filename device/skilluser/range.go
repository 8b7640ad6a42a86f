package skilluser

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// DefaultRange is skills.uid_range's default: 1000 uids in the block that
// systemd's UIDS-GIDS.md leaves unassigned (65536-524287), below where
// useradd starts /etc/subuid ranges (100000), so neither a login account, a
// DynamicUser= service, nobody (65534) nor a rootless container's mapped
// users shares a uid with a skill.
const DefaultRange = "70000-70999"

// maxRangeSize bounds a range; a satellite runs tens of skills.
const maxRangeSize = 1 << 20

// Range is a closed interval of uids (and the same gids).
type Range struct{ First, Last uint32 }

func (r Range) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

// Contains reports whether id lies in r.
func (r Range) Contains(id uint32) bool { return id >= r.First && id <= r.Last }

func (r Range) overlaps(first, last uint32) bool { return first <= r.Last && last >= r.First }

// ParseRange reads "FIRST-LAST". The range must hold neither root, nobody
// (65534), 65535 nor the invalid id 4294967295, and at most 1048576 ids.
func ParseRange(s string) (Range, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	first, err1 := strconv.ParseUint(a, 10, 32)
	last, err2 := strconv.ParseUint(b, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return Range{}, fmt.Errorf("uid range %q: want FIRST-LAST, e.g. %s", s, DefaultRange)
	}
	r := Range{First: uint32(first), Last: uint32(last)}
	switch {
	case r.First > r.Last:
		return Range{}, fmt.Errorf("uid range %q: first %d is above last %d", s, r.First, r.Last)
	case r.First < 1000:
		return Range{}, fmt.Errorf("uid range %q: starts below 1000, among system accounts", s)
	case r.Contains(65534) || r.Contains(65535) || r.Last == 1<<32-1:
		return Range{}, fmt.Errorf("uid range %q: holds nobody (65534), 65535 or -1", s)
	case r.Last-r.First >= maxRangeSize:
		return Range{}, fmt.Errorf("uid range %q: more than %d ids", s, maxRangeSize)
	}
	return r, nil
}

// idFiles are the host's account databases a range must keep clear of.
type idFiles struct {
	Passwd, Group, SubUID, SubGID string
}

var hostIDFiles = idFiles{Passwd: "/etc/passwd", Group: "/etc/group", SubUID: "/etc/subuid", SubGID: "/etc/subgid"}

// checkFree refuses a range that an account or a subordinate id range of the
// host already uses; a missing file holds nothing.
func (r Range) checkFree(f idFiles) error {
	for _, c := range []struct {
		path string
		use  func(line string) (first, last uint32, what string, ok bool)
	}{
		{f.Passwd, colonID}, {f.Group, colonID}, {f.SubUID, subRange}, {f.SubGID, subRange},
	} {
		if err := r.checkFile(c.path, c.use); err != nil {
			return err
		}
	}
	return nil
}

func (r Range) checkFile(path string, use func(string) (uint32, uint32, string, bool)) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("uid range %s: %w", r, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		first, last, what, ok := use(sc.Text())
		if ok && r.overlaps(first, last) {
			return fmt.Errorf("uid range %s: %s in %s uses it; choose a range no account uses (skills.uid_range)", r, what, path)
		}
	}
	return sc.Err()
}

// colonID reads "name:x:ID:..." (passwd and group).
func colonID(line string) (uint32, uint32, string, bool) {
	f := strings.Split(line, ":")
	if len(f) < 3 {
		return 0, 0, "", false
	}
	id, err := strconv.ParseUint(f[2], 10, 32)
	if err != nil {
		return 0, 0, "", false
	}
	return uint32(id), uint32(id), fmt.Sprintf("%s (id %d)", f[0], id), true
}

// subRange reads "name:FIRST:COUNT" (subuid and subgid).
func subRange(line string) (uint32, uint32, string, bool) {
	f := strings.Split(line, ":")
	if len(f) != 3 {
		return 0, 0, "", false
	}
	first, err1 := strconv.ParseUint(f[1], 10, 32)
	count, err2 := strconv.ParseUint(f[2], 10, 32)
	if err1 != nil || err2 != nil || count == 0 || first+count-1 > 1<<32-1 {
		return 0, 0, "", false
	}
	return uint32(first), uint32(first + count - 1), fmt.Sprintf("%s's subordinate ids %d-%d", f[0], first, first+count-1), true
}
