package external

import (
	"crypto/subtle"

	"github.com/chorus-edge/chorus/broker"
)

// Actions an authorization request names (EMQX's ${action}).
const (
	ActionPublish   = "publish"
	ActionSubscribe = "subscribe"
)

// Superuser is the controller's own account on the external broker: it is
// not in the table and may do everything.
type Superuser struct{ Username, Password string }

// Auth decides authentication and authorization requests from the table the
// controller last set (Adapter.Table) and the controller's own account. It
// is the gateway's httpapi.BrokerAuth on an external broker.
type Auth struct {
	Table func() *broker.Table
	Super Superuser
	// HTTPSecret is the shared secret the broker's HTTP requests carry
	// (--broker-auth-secret); empty turns the endpoints off.
	HTTPSecret string
}

// Secret is the shared secret of the HTTP auth endpoints.
func (a Auth) Secret() string { return a.HTTPSecret }

// Authenticate reports whether username and password prove an account, and
// whether it is the superuser. Skills prove themselves with the signature
// their agent minted, exactly as on the embedded broker.
func (a Auth) Authenticate(username, password string) (ok, super bool) {
	if a.Super.Username != "" && username == a.Super.Username {
		ok := a.Super.Password != "" && subtle.ConstantTimeCompare([]byte(password), []byte(a.Super.Password)) == 1
		return ok, ok
	}
	t := a.table()
	if t == nil {
		return false, false
	}
	_, err := t.Authenticate(username, []byte(password))
	return err == nil, false
}

// Authorize reports whether username may publish to (retain: retained) or
// subscribe to topic. It does not authenticate: the broker asks only for
// clients it has authenticated. Unknown users and actions are denied.
func (a Auth) Authorize(username, topic, action string, retain bool) bool {
	if a.Super.Username != "" && username == a.Super.Username {
		return true
	}
	t := a.table()
	if t == nil {
		return false
	}
	acct, ok := t.Lookup(username)
	if !ok {
		return false
	}
	switch action {
	case ActionPublish:
		return acct.MayPublish(topic, retain)
	case ActionSubscribe:
		return acct.MaySubscribe(topic)
	}
	return false
}

func (a Auth) table() *broker.Table {
	if a.Table == nil {
		return nil
	}
	return a.Table()
}
