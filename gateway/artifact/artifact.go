// Package artifact is the skill archive: a reproducible tar.gz of one skill
// directory (Pack) and its safe extraction (Unpack).
//
// The controller packs and publishes artifacts pinned by sha256; the agent
// unpacks them. Both sides share this package (gateway/), so an archive the
// controller accepts is exactly one the agent can unpack.
//
// The archive format is deliberately small: regular files and directories
// only, relative slash-separated names, modes 0644/0755, no owners, no
// times, no links. Pack writes nothing else and Unpack accepts nothing else.
package artifact

import (
	"errors"
)

// Limits caps what Pack writes and Unpack extracts. A zero field takes its
// default (DefaultLimits).
type Limits struct {
	MaxBytes     int64 // total bytes of all files, uncompressed
	MaxFiles     int   // entries, directories included
	MaxFileBytes int64 // bytes of one file
}

// Default limits: generous for a voice skill (scripts, a few models or
// sound files), small enough that a hostile archive cannot fill a Pi's card.
const (
	DefaultMaxBytes     = 256 << 20
	DefaultMaxFiles     = 10000
	DefaultMaxFileBytes = 128 << 20
)

// DefaultLimits returns the limits used for zero fields.
func DefaultLimits() Limits {
	return Limits{MaxBytes: DefaultMaxBytes, MaxFiles: DefaultMaxFiles, MaxFileBytes: DefaultMaxFileBytes}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = d.MaxFiles
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	return l
}

// Info describes a written archive.
type Info struct {
	SHA256 string // lowercase hex sha256 of the archive bytes
	Size   int64  // archive bytes written
}

// Errors callers branch on: ErrUnsafe for an entry refused as dangerous
// (traversal, absolute path, link, device, unsupported type, bad name) and
// ErrTooLarge for a limit exceeded. Both wrap the offending entry's name.
var (
	ErrUnsafe   = errors.New("unsafe archive entry")
	ErrTooLarge = errors.New("archive over limit")
)

// The normalised modes: every directory is 0755, every file 0644 unless any
// executable bit was set, then 0755.
const (
	dirMode  = 0o755
	fileMode = 0o644
	execMode = 0o755
)

func normalMode(isDir bool, perm uint32) uint32 {
	switch {
	case isDir:
		return dirMode
	case perm&0o111 != 0:
		return execMode
	default:
		return fileMode
	}
}
