package broker

import (
	"sync"
	"sync/atomic"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
)

// bucket is a token bucket: it holds at most burst tokens, gains rate tokens
// per second, and each publish takes one. Only its client's goroutine calls
// allow on the packet path, so mu is uncontended; it exists for the race
// detector and for the rare takeover overlap. allow does no I/O.
type bucket struct {
	rate, burst float64

	mu     sync.Mutex // guards tokens and last
	tokens float64
	last   time.Time

	refused atomic.Int64 // publishes refused on this connection
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

// limiter holds the bucket of every connected client, created when the client
// authenticates and dropped when it disconnects. A sync.Map keyed by
// *mqtt.Client keeps the packet path free of a shared lock: each key is
// written once and then only read.
type limiter struct {
	cfg       *Config
	throttled atomic.Int64 // publishes refused by any bucket
	buckets   sync.Map     // *mqtt.Client -> *bucket; a nil *bucket means unlimited
}

// rateFor returns the rate and burst for role; a negative rate means none.
func (c *Config) rateFor(role Role) (float64, int) {
	if role == RoleSkill {
		return c.SkillPublishRate, c.SkillPublishBurst
	}
	return c.PublishRate, c.PublishBurst
}

// add gives cl a full bucket for its role.
func (l *limiter) add(cl *mqtt.Client, role Role) {
	rate, burst := l.cfg.rateFor(role)
	var b *bucket
	if rate >= 0 {
		b = newBucket(rate, burst, l.cfg.Now())
	}
	l.buckets.Store(cl, b)
}

// remove drops cl's bucket and returns how many publishes it refused.
func (l *limiter) remove(cl *mqtt.Client) int64 {
	v, ok := l.buckets.LoadAndDelete(cl)
	if b, _ := v.(*bucket); ok && b != nil {
		return b.refused.Load()
	}
	return 0
}

// allow reports whether cl may publish now, and whether this is the first
// refusal on its connection (worth one log line; later ones are only counted).
// A client without a bucket never authenticated through the policy and is
// refused: deny by default.
func (l *limiter) allow(cl *mqtt.Client) (ok, first bool) {
	v, found := l.buckets.Load(cl)
	if !found {
		l.throttled.Add(1)
		return false, false
	}
	b := v.(*bucket)
	if b == nil || b.allow(l.cfg.Now()) {
		return true, false
	}
	l.throttled.Add(1)
	return false, b.refused.Load() == 1
}

// sweep drops the buckets of closed clients. mochi skips OnDisconnect when a
// client fails between authentication and the end of its CONNACK, so without
// this those entries would leak. It runs on mochi's sys-info tick, off the
// packet path.
func (l *limiter) sweep() {
	l.buckets.Range(func(k, _ any) bool {
		if k.(*mqtt.Client).Closed() {
			l.buckets.Delete(k)
		}
		return true
	})
}

// len counts the clients holding a bucket entry (tests).
func (l *limiter) len() int {
	n := 0
	l.buckets.Range(func(_, _ any) bool { n++; return true })
	return n
}
