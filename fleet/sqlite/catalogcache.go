package sqlite

import (
	"bytes"
	"slices"
	"sync"

	"github.com/chorus-edge/chorus/fleet"
)

// latestCache holds what LatestVersion last read for each skill: the
// controller asks it for every fleet-managed skill a device reports, on
// every pass over the device (Home Assistant's update entity), which was
// 1.7 s of a 10,000-device install's gateway CPU (docs/benchmarks.md,
// issue 19). The catalog only grows, by PublishVersion (versions are never
// changed or deleted while the gateway runs), and PublishVersion drops the
// whole cache once it has committed.
//
// A reader notes the generation before its read transaction and keeps its
// result only if no drop happened since, so a version published while it
// read cannot leave the older latest behind (the rule of desiredcache.go).
// Only found versions are kept: a skill that is not in the catalog is read
// again.
type latestCache struct {
	mu       sync.Mutex // guards the fields below
	gen      uint64     // counts drops
	versions map[string]fleet.SkillVersion
}

func newLatestCache() *latestCache {
	return &latestCache{versions: map[string]fleet.SkillVersion{}}
}

// get returns a copy of skill's cached latest version, or the generation a
// reader that misses passes to put.
func (c *latestCache) get(skill string) (*fleet.SkillVersion, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.versions[skill]
	if !ok {
		return nil, c.gen, false
	}
	return copyVersion(v), c.gen, true
}

// put keeps a copy of v, read after gen was noted, unless a drop happened
// since.
func (c *latestCache) put(v *fleet.SkillVersion, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	c.versions[v.SkillID] = *copyVersion(*v)
}

// dropAll forgets every skill (a version was published).
func (c *latestCache) dropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.versions)
}

// copyVersion copies v with its slices: no caller shares a cached value.
func copyVersion(v fleet.SkillVersion) *fleet.SkillVersion {
	v.Manifest = bytes.Clone(v.Manifest)
	v.Requirements = slices.Clone(v.Requirements)
	return &v
}
