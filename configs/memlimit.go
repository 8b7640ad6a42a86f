package configs

import (
	"fmt"
	"strconv"
	"strings"
)

// minMemoryLimit is the smallest memory_limit accepted: below it the Go
// runtime would collect continuously (the agent alone holds ~6 MiB of heap
// and runtime at idle), so a smaller figure is almost certainly a unit left
// off ("256" meant 256MiB).
const minMemoryLimit = 4 << 20

// memoryUnits are GOMEMLIMIT's units (runtime/debug.SetMemoryLimit).
var memoryUnits = []struct {
	suffix string
	scale  int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// ParseMemoryLimit reads a memory limit as GOMEMLIMIT writes it: a whole
// number of bytes with an optional unit B, KiB, MiB, GiB or TiB ("256MiB",
// "1GiB", "536870912"). "" and "off" mean no limit (set false). A limit is
// a soft target for the Go runtime's heap, stacks and runtime memory, not a
// cap on the process (docs/configuration.md, memory_limit).
func ParseMemoryLimit(s string) (limit int64, set bool, err error) {
	t := strings.TrimSpace(s)
	if t == "" || t == "off" {
		return 0, false, nil
	}
	num, scale := t, int64(1)
	for _, u := range memoryUnits {
		if strings.HasSuffix(t, u.suffix) {
			num, scale = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.scale
			break
		}
	}
	n, perr := strconv.ParseInt(num, 10, 64)
	if perr != nil || n < 0 {
		return 0, false, fmt.Errorf("%q: want a whole number of bytes with an optional unit B, KiB, MiB, GiB or TiB (e.g. 256MiB, 1GiB), or off", s)
	}
	if n > (1<<63-1)/scale {
		return 0, false, fmt.Errorf("%q: too large", s)
	}
	if n*scale < minMemoryLimit {
		return 0, false, fmt.Errorf("%q is %d bytes: at least 4MiB (was a unit left off? e.g. 256MiB)", s, n*scale)
	}
	return n * scale, true, nil
}
