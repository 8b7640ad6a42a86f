package controller

import (
	"sync"
)

// maxPendingChanges bounds what one subscriber holds between two Takes;
// past it the subscriber is told everything changed.
const maxPendingChanges = 16384

// Changes is one subscriber's feed of what the controller changed: the
// subjects of the audit log ("device/<id>", "rollout/<id>", "skill/<id>",
// ...), coalesced until Take. Wake is signalled (never blocking the
// controller) whenever something is pending. The dashboard's live updates
// are fed by it (docs/dashboard.md): no database poll per open page.
type Changes struct {
	wake chan struct{}

	mu       sync.Mutex // guards the fields below
	subjects map[string]struct{}
	all      bool
}

// Wake is readable when changes are pending.
func (f *Changes) Wake() <-chan struct{} { return f.wake }

// Take returns and clears the pending subjects; all is true when the feed
// overflowed and the subscriber must assume everything changed.
func (f *Changes) Take() (subjects []string, all bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subjects {
		subjects = append(subjects, s)
	}
	clear(f.subjects)
	all, f.all = f.all, false
	return subjects, all
}

func (f *Changes) add(subject string) {
	f.mu.Lock()
	if len(f.subjects) >= maxPendingChanges {
		f.all = true
	} else {
		f.subjects[subject] = struct{}{}
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// changeHub is the set of subscribers; changed is called on the
// controller's goroutines and only takes the hub's lock and each feed's.
type changeHub struct {
	mu   sync.Mutex
	subs map[*Changes]struct{}
}

// SubscribeChanges returns a new feed and the function that ends it.
func (c *Controller) SubscribeChanges() (*Changes, func()) {
	f := &Changes{wake: make(chan struct{}, 1), subjects: map[string]struct{}{}}
	h := &c.changes
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[*Changes]struct{}{}
	}
	h.subs[f] = struct{}{}
	h.mu.Unlock()
	return f, func() {
		h.mu.Lock()
		delete(h.subs, f)
		h.mu.Unlock()
	}
}

// changed tells every subscriber that subject changed.
func (c *Controller) changed(subject string) {
	h := &c.changes
	h.mu.Lock()
	defer h.mu.Unlock()
	for f := range h.subs {
		f.add(subject)
	}
}

// BirthInfo is what a device's latest birth said beyond what the registry
// stores (docs/topics.md `birth`): kept in memory, refilled at start from
// the retained birth topics.
type BirthInfo struct {
	Hostname  string
	Arch      string
	Isolation string // "uid" or "none"; "" when the agent did not say
	Websocket string
}

// births holds each device's latest BirthInfo.
type births struct {
	mu sync.Mutex
	m  map[string]BirthInfo
}

func (b *births) set(dev string, info BirthInfo) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]BirthInfo{}
	}
	b.m[dev] = info
}

// setIfAbsent keeps a live connection's details over a retained one's.
func (b *births) setIfAbsent(dev string, info BirthInfo) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]BirthInfo{}
	}
	if _, ok := b.m[dev]; !ok {
		b.m[dev] = info
	}
}

func (b *births) forget(dev string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, dev)
}

// Birth returns what the device's latest birth said, if one was seen since
// the controller started.
func (c *Controller) Birth(dev string) (BirthInfo, bool) {
	c.births.mu.Lock()
	defer c.births.mu.Unlock()
	info, ok := c.births.m[dev]
	return info, ok
}
