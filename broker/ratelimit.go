package broker

import (
	"sync"
	"sync/atomic"
	"time"
)

// bucket is a token bucket: it holds at most burst tokens, gains rate tokens
// per second, and each publish takes one. There is one per account, shared
// by the account's connections (at most a few: RoleLimits.Connections), so
// mu is contended only between connections of one account. allow does no
// I/O.
type bucket struct {
	rate, burst float64

	mu     sync.Mutex // guards tokens and last
	tokens float64
	last   time.Time

	refused atomic.Int64 // publishes refused by this bucket
}

func newBucket(rate float64, burst int, now time.Time) *bucket {
	return &bucket{rate: rate, burst: float64(burst), tokens: float64(burst), last: now}
}

// allow takes a token if one is available at now. A clock that steps back
// refills nothing and the count goes on from the new time: keeping the old
// time instead would refuse the client until the clock caught up (an hour
// after a one-hour step). A step forward refills at most the burst.
func (b *bucket) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.burst, b.tokens+d.Seconds()*b.rate)
	}
	b.last = now
	if b.tokens < 1 {
		b.refused.Add(1)
		return false
	}
	b.tokens--
	return true
}

// full reports whether the bucket would be full at now: an account whose
// last connection left can forget it then without handing out a fresh
// burst early.
func (b *bucket) full(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens+max(0, now.Sub(b.last).Seconds())*b.rate >= b.burst
}

// newBucket returns a full bucket for an account with limits lim, or nil
// when its role has no rate limit.
func (p *policy) newBucket(lim *RoleLimits) *bucket {
	if lim.PublishRate < 0 {
		return nil
	}
	return newBucket(lim.PublishRate, lim.PublishBurst, p.cfg.Now())
}
