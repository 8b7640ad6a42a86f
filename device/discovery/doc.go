// Package discovery finds the skills a device agent could run: it scans the
// skill roots, parses each SKILL.md, gates each skill's exec target and
// publishes the result as an immutable Catalog.
//
// Nothing here starts a process or touches the bus; the skill manager
// (SKILL_MANAGER §2-§6) decides what to load from a Catalog. The package is
// the Go form of seeds/002's loader: its frontmatter subset, its canonical
// name identity, its collections and its sidecar gate (here: the exec gate).
//
// Guarantees, in one place:
//   - Discover never panics on what it finds on disk; a broken skill is an
//     invalid entry, a collision is a Problem, and only "cannot tell" (a root
//     that exists but cannot be listed, or is not a directory) is an error.
//   - A Catalog is immutable once returned; Store publishes it by one atomic
//     pointer swap, so a reader never sees a half-built map.
//   - Every path read on behalf of a skill stays inside the skill directory
//     (ReadFile, the exec gate): no "..", no absolute path, no symlink out.
package discovery
