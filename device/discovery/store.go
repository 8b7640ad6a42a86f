package discovery

import "sync/atomic"

// Store publishes the current Catalog. A discovery pass builds a fresh
// Catalog and publishes it with one Swap, so a reader sees either the
// complete old catalog or the complete new one, never a half-built map.
// SKILL_MANAGER §1; seeds/002: discover's single reference swap.
//
// The zero value is ready to use and holds an empty catalog. Safe for
// concurrent use.
type Store struct {
	cur atomic.Pointer[Catalog]
}

// Load returns the current catalog; never nil.
func (s *Store) Load() *Catalog {
	if c := s.cur.Load(); c != nil {
		return c
	}
	return &Catalog{}
}

// Swap publishes next (nil means empty) and returns the previous catalog
// (never nil).
func (s *Store) Swap(next *Catalog) *Catalog {
	if next == nil {
		next = &Catalog{}
	}
	if prev := s.cur.Swap(next); prev != nil {
		return prev
	}
	return &Catalog{}
}
