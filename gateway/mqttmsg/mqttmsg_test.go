package mqttmsg

import "testing"

// Get answers the first of repeated keys and "" for a missing one.
func TestUserPropertiesGet(t *testing.T) {
	u := UserProperties{{"session", "3"}, {"trace", "a"}, {"session", "4"}}
	if got := u.Get("session"); got != "3" {
		t.Errorf("Get(session) = %q, want the first, 3", got)
	}
	if got := u.Get("missing"); got != "" {
		t.Errorf("Get(missing) = %q, want empty", got)
	}
	if got := UserProperties(nil).Get("x"); got != "" {
		t.Errorf("nil Get = %q", got)
	}
}
