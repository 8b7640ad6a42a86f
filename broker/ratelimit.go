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

// untilToken returns how long from now until the bucket holds a token.
func (b *bucket) untilToken(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	missing := 1 - (b.tokens + max(0, now.Sub(b.last).Seconds())*b.rate)
	if missing <= 0 || b.rate <= 0 {
		return 0
	}
	return time.Duration(missing / b.rate * float64(time.Second))
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

// Flood back-pressure: after floodRun refusals in a row a client is
// flooding, and from then on its connection is read no faster than its
// account's rate: each publish waits (at most floodPause at a time) until the
// bucket holds a token. The flood waits in the flooder's own socket instead
// of costing the broker a decode and a refusal per message at wire speed.
// The flooding state ends once the client has been quiet long enough for its
// bucket to refill (a sleep that overshoots on a loaded machine leaves a
// token to spare, and ending there re-opened a run of refusals at wire
// speed); a client that hits its limit now and then is only refused.
const (
	floodRun   = 16
	floodPause = 250 * time.Millisecond
)

// allowRate decides a publish against the account's bucket. It runs on the
// client's read goroutine only, which owns s.refusedRun and s.flooding.
func (p *policy) allowRate(s *session) bool {
	b := s.account.bucket
	if b == nil {
		return true
	}
	now := p.cfg.Now()
	if s.flooding {
		if b.full(now) {
			s.flooding = false // quiet long enough to refill its burst
		} else if d := min(b.untilToken(now), floodPause); d > 0 {
			time.Sleep(d)
			now = p.cfg.Now()
		}
	}
	if !b.allow(now) {
		if s.refusedRun++; s.refusedRun > floodRun {
			s.flooding = true
		}
		return false
	}
	s.refusedRun = 0
	return true
}
