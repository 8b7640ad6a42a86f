package discovery

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
)

// ManifestEntry is one skill in the manifest. SKILL_MANAGER §1: id,
// directory, version, document and exec sha256, gate result, requirements.
//
// Fields are declared in the lexical order of their JSON keys, so the
// encoding is the same as a sorted-keys encoder's (see Catalog.Digest).
type ManifestEntry struct {
	Dir          string   `json:"dir"`         // relative to its root, "/"-separated: "hello", "coll/member"
	DocSHA256    string   `json:"doc_sha256"`  // "" when SKILL.md was unreadable
	ExecSHA256   string   `json:"exec_sha256"` // "" unless the gate passed
	Gate         Gate     `json:"gate"`
	ID           string   `json:"id"`
	Requirements []string `json:"requirements"` // never null
	Root         RootKind `json:"root"`
	Version      string   `json:"version"`
}

// Gate is the load verdict of one skill: OK, or the Invalid reason.
type Gate struct {
	Error string `json:"error"`
	OK    bool   `json:"ok"`
}

// Manifest is the catalog's entries in discovery order and their digest.
type Manifest struct {
	Digest  string          `json:"digest"`
	Entries []ManifestEntry `json:"entries"`
}

// Manifest returns the manifest of the catalog.
func (c *Catalog) Manifest() Manifest {
	if c == nil {
		return (&Catalog{}).Manifest()
	}
	return Manifest{Digest: c.Digest(), Entries: manifestEntries(c.entries)}
}

// Digest is "sha256:<hex>" over the canonical JSON of the manifest entries:
// the entries array in discovery order, each object with its keys sorted,
// no insignificant whitespace, UTF-8 as is (no HTML or \u escaping), no
// trailing newline. Absolute paths are left out (Dir is root-relative) so
// the digest does not depend on where the data directory lives. It goes
// into the retained skills topic so the controller can detect drift
// without reading the list. SKILL_MANAGER §1; seeds/002: bootstrap_manifest.
func (c *Catalog) Digest() string {
	if c == nil || c.digest == "" {
		return digestOf(nil)
	}
	return c.digest
}

func manifestEntries(skills []Skill) []ManifestEntry {
	out := make([]ManifestEntry, 0, len(skills))
	for _, s := range skills {
		out = append(out, ManifestEntry{
			Dir:          relDir(s),
			DocSHA256:    s.DocSHA256,
			ExecSHA256:   s.ExecSHA256,
			Gate:         Gate{OK: s.Valid, Error: s.Invalid},
			ID:           s.ID,
			Requirements: append([]string{}, s.Requirements...),
			Root:         s.Root,
			Version:      s.Version,
		})
	}
	return out
}

// relDir is s.Dir relative to its root, "/"-separated.
func relDir(s Skill) string {
	rel, err := filepath.Rel(s.RootDir, s.Dir)
	if err != nil || s.RootDir == "" {
		rel = filepath.Base(s.Dir)
	}
	return filepath.ToSlash(rel)
}

// digestOf hashes the canonical JSON of entries (see Catalog.Digest).
func digestOf(entries []ManifestEntry) string {
	if entries == nil {
		entries = []ManifestEntry{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(entries) // strings, bools and slices only: cannot fail
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}
