package fleet_test

import (
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

// State and Usable apply one rule: revoked before expired before used up.
func TestJoinTokenState(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	live := fleet.JoinToken{ID: "t1", Uses: 2, Used: 1, ExpiresAt: now.Add(time.Hour)}
	for _, tc := range []struct {
		name string
		edit func(*fleet.JoinToken)
		want string
	}{
		{"usable", func(*fleet.JoinToken) {}, fleet.TokenUsable},
		{"revoked, also expired and used up", func(t *fleet.JoinToken) { t.RevokedAt, t.ExpiresAt, t.Used = now, now, 2 }, fleet.TokenRevoked},
		{"expired at the instant, also used up", func(t *fleet.JoinToken) { t.ExpiresAt, t.Used = now, 2 }, fleet.TokenExpired},
		{"used up", func(t *fleet.JoinToken) { t.Used = 2 }, fleet.TokenUsedUp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := live
			tc.edit(&tok)
			if got := tok.State(now); got != tc.want {
				t.Errorf("State = %q, want %q", got, tc.want)
			}
			if err := tok.Usable(now); (err == nil) != (tc.want == fleet.TokenUsable) {
				t.Errorf("Usable = %v for a token %s", err, tc.want)
			}
		})
	}
}
