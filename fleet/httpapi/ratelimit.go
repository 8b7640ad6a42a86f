package httpapi

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/fleet/api"
)

// maxLimited caps the clients the join limiter remembers; past it, clients
// whose bucket has refilled are forgotten and, while it is still full, the
// longest idle one (a flood from many addresses can neither grow the map
// without bound nor lock new clients out: a forgotten client only starts
// again from a full bucket, and a join still needs a 256-bit secret).
const maxLimited = 4096

// limiter is a token bucket per client address (docs/security.md, "Join
// tokens"): rate requests a second, burst at once. It is safe for
// concurrent use; mu guards buckets.
type limiter struct {
	rate  float64
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLimiter(rate float64, burst int, now func() time.Time) *limiter {
	if now == nil {
		now = time.Now
	}
	return &limiter{rate: rate, burst: float64(burst), now: now, buckets: map[string]*bucket{}}
}

// allow takes one token of addr's bucket; when there is none it returns
// false and how long until there is.
func (l *limiter) allow(addr string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.buckets[addr]
	if !ok {
		if len(l.buckets) >= maxLimited {
			l.forgetRefilled(now)
		}
		if len(l.buckets) >= maxLimited {
			l.forgetIdlest()
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[addr] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	}
	b.tokens--
	return true, 0
}

// forgetIdlest forgets the client heard from longest ago; l.mu is held.
func (l *limiter) forgetIdlest() {
	var idlest string
	var at time.Time
	for addr, b := range l.buckets {
		if idlest == "" || b.at.Before(at) {
			idlest, at = addr, b.at
		}
	}
	delete(l.buckets, idlest)
}

// limitKey is whom the limiter counts a request against: the IPv4
// address, or the IPv6 /64 (one host is usually given a whole /64, so its
// single addresses cost it nothing).
func limitKey(host string) string {
	ip := net.ParseIP(host)
	if ip == nil || ip.To4() != nil {
		return host
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

func (l *limiter) forgetRefilled(now time.Time) {
	for addr, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, addr)
		}
	}
}

// limited wraps h with the limiter, keyed by the client's IP address;
// a refused request is 429 with Retry-After.
func (s *Server) limited(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		host := clientHost(r)
		if ok, wait := s.joinLimit.allow(limitKey(host)); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
			writeCode(w, http.StatusTooManyRequests, api.CodeRateLimited, "too many join requests from "+host+": wait and retry (Retry-After says when)")
			return
		}
		h(w, r)
	}
}
