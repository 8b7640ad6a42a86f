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

// artifactCache holds what ArtifactBySHA256 found for each sha256: the
// download handler asks it on every artifact a device fetches, one read
// transaction per device in a rollout (2.5 % of the gateway's CPU in a
// 5,000-device install, docs/benchmarks.md issue 19 round five). The answer
// is the first version published with the sum (the lowest seq); versions
// are never changed or deleted while the gateway runs and a later publish
// takes a higher seq, so once found the answer never changes and needs no
// drop. Only found sums are kept, so it holds at most one entry per
// artifact in the catalog, never one per device.
type artifactCache struct {
	mu       sync.Mutex // guards versions
	versions map[string]fleet.SkillVersion
}

func newArtifactCache() *artifactCache {
	return &artifactCache{versions: map[string]fleet.SkillVersion{}}
}

// get returns a copy of the version cached for sum.
func (c *artifactCache) get(sum string) (*fleet.SkillVersion, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.versions[sum]
	if !ok {
		return nil, false
	}
	return copyVersion(v), true
}

// put keeps a copy of v, the version found for its sum.
func (c *artifactCache) put(v *fleet.SkillVersion) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.versions[v.SHA256] = *copyVersion(*v)
}

// copyVersion copies v with its slices: no caller shares a cached value.
func copyVersion(v fleet.SkillVersion) *fleet.SkillVersion {
	v.Manifest = bytes.Clone(v.Manifest)
	v.Requirements = slices.Clone(v.Requirements)
	return &v
}
