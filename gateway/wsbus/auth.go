package wsbus

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/chorus-edge/chorus/gateway/topic"
)

// Who a connection speaks as (ARCHITECTURE.md §6, "an identity is an
// account"): the device's OVOS services with the device's authority, one
// skill with that skill's own, or nobody.
//
// ovos-bus-client sends no credentials and builds its URL from mycroft.conf's
// websocket host, port, route and ssl (BUS.md §3), so the secret is in the
// route:
//   - services: <Route>/<token>, from a loopback socket owned by root, the
//     server's own uid or one of ServicesUIDs (the route is written where
//     only they can read it; the uid check stops anyone the route leaked to);
//   - skill S:  <Route>/skill/<S>/<token for S>, handed to S alone.
//
// Each token is an HMAC of Secret, so the agent keeps one secret and derives
// every route; a token names what it is for, and one skill's route never
// opens another's. Anything else, the plain <Route> of a stock
// configuration included, is refused before the upgrade.
type identity struct {
	skill string // "" = the device's services
}

func (id identity) String() string {
	if id.skill == "" {
		return "services"
	}
	return "skill " + id.skill
}

// errRefused marks a connection refused for who it is.
var errRefused = errors.New("websocket connection refused")

// skillSegment is the path segment before a skill's id.
const skillSegment = "/skill/"

// newSecret returns a random secret for Config.Secret.
func newSecret() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux
	return b
}

// token is the route token for label: 32 bytes of HMAC-SHA256, base64url.
func token(secret []byte, label string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("chorus-ws-route/v1\x00" + label))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *Server) base() string { return strings.TrimSuffix(s.cfg.Route, "/") }

// ServicesRoute is the route of the device's OVOS services: the
// `websocket.route` to write into their mycroft.conf.
func (s *Server) ServicesRoute() string { return s.base() + "/" + token(s.secret, "services") }

// SkillRoute is skill's own route; its client is relayed with the skill's
// own MQTT credentials. The id is not checked here: a bad id's route is
// refused on use.
func (s *Server) SkillRoute(skill string) string {
	return s.base() + skillSegment + skill + "/" + token(s.secret, "skill\x00"+skill)
}

// ServicesURL is ws://<Addr()><ServicesRoute()>.
func (s *Server) ServicesURL() string { return "ws://" + s.Addr() + s.ServicesRoute() }

// SkillURL is ws://<Addr()><SkillRoute(skill)>.
func (s *Server) SkillURL(skill string) string { return "ws://" + s.Addr() + s.SkillRoute(skill) }

// authenticate decides who r speaks as, from its path and, on the services
// route, the uid owning the peer's socket. The reason of a refusal is for
// the log; it never repeats the path, which may hold a near-secret.
func (s *Server) authenticate(r *http.Request) (identity, error) {
	path := r.URL.Path
	if equal(path, s.ServicesRoute()) {
		return identity{}, s.checkPeer(r)
	}
	if rest, ok := strings.CutPrefix(path, s.base()+skillSegment); ok {
		return s.skillIdentity(rest)
	}
	if path == s.cfg.Route || path == s.base() {
		return identity{}, fmt.Errorf("%w: the plain route %s has no authority; OVOS services need the route the agent wrote to their mycroft.conf (docs/ovos.md)", errRefused, s.cfg.Route)
	}
	return identity{}, fmt.Errorf("%w: unknown route", errRefused)
}

func (s *Server) skillIdentity(rest string) (identity, error) {
	skill, tok, ok := strings.Cut(rest, "/")
	if !ok || topic.ValidSkillID(skill) != nil || !equal(tok, token(s.secret, "skill\x00"+skill)) {
		return identity{}, fmt.Errorf("%w: not a skill route", errRefused)
	}
	if s.cfg.DialSkill == nil {
		return identity{}, fmt.Errorf("%w: skill routes are off", errRefused)
	}
	return identity{skill: skill}, nil
}

// checkPeer refuses a services connection whose socket is not owned by an
// allowed uid (or cannot be found: a peer on another host).
func (s *Server) checkPeer(r *http.Request) error {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(interface{ String() string })
	if local == nil {
		return fmt.Errorf("%w: no local address to check the peer against", errRefused)
	}
	uid, err := s.cfg.peerUID(local.String(), r.RemoteAddr)
	if err != nil {
		return fmt.Errorf("%w: services route from %s: %v", errRefused, r.RemoteAddr, err)
	}
	if uid == 0 || int(uid) == os.Geteuid() {
		return nil
	}
	for _, u := range s.cfg.ServicesUIDs {
		if u == uid {
			return nil
		}
	}
	return fmt.Errorf("%w: services route from uid %d, which is not an OVOS services user (websocket.services_user)", errRefused, uid)
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
