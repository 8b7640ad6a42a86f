package bridge_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/chorus-edge/chorus/gateway/bridge"
	"github.com/chorus-edge/chorus/gateway/envelope"
)

func msg(t *testing.T, raw string) envelope.Message {
	t.Helper()
	m, err := envelope.Decode([]byte(raw))
	if err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return m
}

// canon re-encodes through JSON so json.Number and []any compare equal.
func canon(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(x)
	return string(out)
}

var kitchen = bridge.Route{Satellite: "pi-kitchen", Hub: "hub"}

func TestSessionTranslation(t *testing.T) {
	tests := []struct {
		name, sat, id, hub string
	}{
		{"default", "pi-kitchen", "default", "chorus-pi-kitchen"},
		{"empty reads as default", "pi-kitchen", "", "chorus-pi-kitchen"},
		{"own id", "pi-kitchen", "abc", "chorus-pi-kitchen:abc"},
		{"another satellite's id stays scoped", "pi-kitchen", "chorus-pi-bedroom", "chorus-pi-kitchen:chorus-pi-bedroom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bridge.HubSessionID(tt.sat, tt.id); got != tt.hub {
				t.Fatalf("HubSessionID = %q, want %q", got, tt.hub)
			}
			back, ok := bridge.SatelliteSessionID(tt.sat, tt.hub)
			want := tt.id
			if want == "" {
				want = "default"
			}
			if !ok || back != want {
				t.Fatalf("SatelliteSessionID(%q) = %q, %v; want %q", tt.hub, back, ok, want)
			}
		})
	}
	for _, foreign := range []string{"default", "chorus-pi-kitchen-2", "chorus-pi-kitchen:", "chorus-pi", ""} {
		if _, ok := bridge.SatelliteSessionID("pi-kitchen", foreign); ok {
			t.Errorf("SatelliteSessionID(%q) claimed by pi-kitchen", foreign)
		}
	}
}

func TestInbound(t *testing.T) {
	policy := bridge.Route{Satellite: "pi-kitchen", Hub: "hub", BlacklistedSkills: []string{"timer.skill"}, BlacklistedIntents: []string{"music.skill:play"}}
	tests := []struct {
		name    string
		route   bridge.Route
		in      string
		wantCtx string // the whole context after the rules
		notes   int
		err     error
	}{
		{name: "no session materialised and translated", route: kitchen,
			in:      `{"type":"recognizer_loop:utterance","data":{"utterances":["hi"]}}`,
			wantCtx: `{"destination":"skills","session":{"session_id":"chorus-pi-kitchen"},"source":"chorus:pi-kitchen"}`},
		{name: "default never crosses untranslated", route: kitchen,
			in:      `{"type":"ovos.utterance.handle","context":{"session":{"session_id":"default","lang":"en-US"}}}`,
			wantCtx: `{"destination":"skills","session":{"lang":"en-US","session_id":"chorus-pi-kitchen"},"source":"chorus:pi-kitchen"}`},
		{name: "own session id scoped", route: kitchen,
			in:      `{"type":"ovos.utterance.handle","context":{"session":{"session_id":"s1"}}}`,
			wantCtx: `{"destination":"skills","session":{"session_id":"chorus-pi-kitchen:s1"},"source":"chorus:pi-kitchen"}`},
		{name: "forged source overridden", route: kitchen,
			in:      `{"type":"ovos.utterance.handle","context":{"source":"chorus:pi-bedroom"}}`,
			wantCtx: `{"destination":"skills","session":{"session_id":"chorus-pi-kitchen"},"source":"chorus:pi-kitchen"}`, notes: 1},
		{name: "own source kept silently", route: kitchen,
			in:      `{"type":"ovos.utterance.handle","context":{"source":"chorus:pi-kitchen"}}`,
			wantCtx: `{"destination":"skills","session":{"session_id":"chorus-pi-kitchen"},"source":"chorus:pi-kitchen"}`},
		{name: "destination kept", route: kitchen,
			in:      `{"type":"ovos.utterance.handle","context":{"destination":["audio"]}}`,
			wantCtx: `{"destination":["audio"],"session":{"session_id":"chorus-pi-kitchen"},"source":"chorus:pi-kitchen"}`},
		{name: "destination naming a participant replaced", route: kitchen,
			in:      `{"type":"ovos.utterance.handle","context":{"destination":"chorus:pi-bedroom"}}`,
			wantCtx: `{"destination":"skills","session":{"session_id":"chorus-pi-kitchen"},"source":"chorus:pi-kitchen"}`, notes: 1},
		{name: "wrong-typed session replaced", route: kitchen,
			in:      `{"type":"ovos.utterance.handle","context":{"session":"default"}}`,
			wantCtx: `{"destination":"skills","session":{"session_id":"chorus-pi-kitchen"},"source":"chorus:pi-kitchen"}`, notes: 1},
		{name: "wrong-typed session_id read as default", route: kitchen,
			in:      `{"type":"ovos.utterance.handle","context":{"session":{"session_id":7}}}`,
			wantCtx: `{"destination":"skills","session":{"session_id":"chorus-pi-kitchen"},"source":"chorus:pi-kitchen"}`, notes: 1},
		{name: "policy merged", route: policy,
			in:      `{"type":"ovos.utterance.handle","context":{"session":{"session_id":"default","blacklisted_skills":["a.skill","timer.skill"]}}}`,
			wantCtx: `{"destination":"skills","session":{"blacklisted_intents":["music.skill:play"],"blacklisted_skills":["a.skill","timer.skill"],"session_id":"chorus-pi-kitchen"},"source":"chorus:pi-kitchen"}`},
		{name: "wrong-typed blacklist replaced by policy", route: policy,
			in:      `{"type":"ovos.utterance.handle","context":{"session":{"blacklisted_skills":"x"}}}`,
			wantCtx: `{"destination":"skills","session":{"blacklisted_intents":["music.skill:play"],"blacklisted_skills":["timer.skill"],"session_id":"chorus-pi-kitchen"},"source":"chorus:pi-kitchen"}`, notes: 1},
		{name: "type not allowed", route: kitchen, in: `{"type":"speak"}`, err: bridge.ErrNotAllowed},
		{name: "type allowed by the route", route: bridge.Route{Satellite: "pi-kitchen", Hub: "hub", Allow: []string{"speak"}},
			in:      `{"type":"speak","context":{"session":{"session_id":"default"}}}`,
			wantCtx: `{"destination":"skills","session":{"session_id":"chorus-pi-kitchen"},"source":"chorus:pi-kitchen"}`},
		{name: "route allow replaces the default", route: bridge.Route{Satellite: "pi-kitchen", Hub: "hub", Allow: []string{"speak"}},
			in: `{"type":"ovos.utterance.handle"}`, err: bridge.ErrNotAllowed},
		{name: "twin never crosses", route: kitchen,
			in: `{"type":"ovos.utterance.handle","context":{"_namespace_compat_twin":true}}`, err: bridge.ErrTwin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := msg(t, tt.in)
			before := canon(t, in)
			out, notes, err := bridge.Inbound(tt.route, in)
			if canon(t, in) != before {
				t.Errorf("input modified: %s", canon(t, in))
			}
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := canon(t, out.Context); got != tt.wantCtx {
				t.Errorf("context\n got %s\nwant %s", got, tt.wantCtx)
			}
			if len(notes) != tt.notes {
				t.Errorf("notes = %v, want %d", notes, tt.notes)
			}
			if out.Type != in.Type || canon(t, out.Data) != canon(t, in.Data) {
				t.Errorf("type or data changed: %s %s", out.Type, canon(t, out.Data))
			}
		})
	}
}

func TestOutbound(t *testing.T) {
	policy := bridge.Route{Satellite: "pi-kitchen", Hub: "hub", BlacklistedSkills: []string{"timer.skill"}}
	hosting := bridge.OutboundOptions{HostsSkills: true}
	tests := []struct {
		name    string
		route   bridge.Route
		opts    bridge.OutboundOptions
		in      string
		wantCtx string
		err     error
	}{
		{name: "reply to the participant", route: kitchen,
			in:      `{"type":"speak","context":{"source":"skills","destination":"chorus:pi-kitchen","session":{"session_id":"chorus-pi-kitchen","lang":"en-US"}}}`,
			wantCtx: `{"destination":"chorus:pi-kitchen","session":{"lang":"en-US","session_id":"default"},"source":"skills"}`},
		{name: "array destination", route: kitchen,
			in:      `{"type":"speak","context":{"destination":["audio","chorus:pi-kitchen"],"session":{"session_id":"chorus-pi-kitchen:s1"}}}`,
			wantCtx: `{"destination":["audio","chorus:pi-kitchen"],"session":{"session_id":"s1"}}`},
		{name: "broadcast not relayed", route: kitchen,
			in: `{"type":"speak","context":{"session":{"session_id":"chorus-pi-kitchen"}}}`, err: bridge.ErrNotAddressed},
		{name: "broadcast relayed by session when asked", route: kitchen, opts: bridge.OutboundOptions{BySession: true},
			in:      `{"type":"ovos.utterance.handled","context":{"session":{"session_id":"chorus-pi-kitchen"}}}`,
			wantCtx: `{"session":{"session_id":"default"}}`},
		{name: "another participant's message", route: kitchen,
			in: `{"type":"speak","context":{"destination":"chorus:pi-bedroom"}}`, err: bridge.ErrNotAddressed},
		{name: "hub session never shown", route: kitchen,
			in:      `{"type":"speak","context":{"destination":"chorus:pi-kitchen","session":{"session_id":"default","blacklisted_skills":["x"]}}}`,
			wantCtx: `{"destination":"chorus:pi-kitchen","session":{"session_id":"default"}}`},
		{name: "policy taken out again", route: policy,
			in:      `{"type":"speak","context":{"destination":"chorus:pi-kitchen","session":{"session_id":"chorus-pi-kitchen","blacklisted_skills":["a.skill","timer.skill"]}}}`,
			wantCtx: `{"destination":"chorus:pi-kitchen","session":{"blacklisted_skills":["a.skill"],"session_id":"default"}}`},
		{name: "converse ping to a satellite without skills", route: kitchen,
			in: `{"type":"ovos.converse.ping","context":{"destination":"chorus:pi-kitchen","session":{"session_id":"chorus-pi-kitchen"}}}`, err: bridge.ErrPollFiltered},
		{name: "converse ping to a satellite hosting skills", route: kitchen, opts: hosting,
			in:      `{"type":"ovos.converse.ping","context":{"destination":"chorus:pi-kitchen","session":{"session_id":"chorus-pi-kitchen"}}}`,
			wantCtx: `{"destination":"chorus:pi-kitchen","session":{"session_id":"default"}}`},
		{name: "poll in a session not the satellite's", route: kitchen, opts: hosting,
			in: `{"type":"ovos.stop.ping","context":{"destination":"chorus:pi-kitchen","session":{"session_id":"default"}}}`, err: bridge.ErrPollFiltered},
		{name: "twin never crosses", route: kitchen,
			in: `{"type":"speak","context":{"destination":"chorus:pi-kitchen","_namespace_compat_twin":true}}`, err: bridge.ErrTwin},
	}
	for _, poll := range []string{"ovos.converse.pong", "ovos.common_query.ping", "ovos.common_query.pong", "ovos.common_query.request",
		"ovos.common_query.response", "ovos.fallback.ping", "ovos.fallback.pong", "ovos.stop.pong"} {
		tests = append(tests, struct {
			name    string
			route   bridge.Route
			opts    bridge.OutboundOptions
			in      string
			wantCtx string
			err     error
		}{name: poll + " filtered", route: kitchen, err: bridge.ErrPollFiltered,
			in: `{"type":"` + poll + `","context":{"destination":"chorus:pi-kitchen","session":{"session_id":"chorus-pi-kitchen"}}}`})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := msg(t, tt.in)
			before := canon(t, in)
			out, _, err := bridge.Outbound(tt.route, in, tt.opts)
			if canon(t, in) != before {
				t.Errorf("input modified")
			}
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := canon(t, out.Context); got != tt.wantCtx {
				t.Errorf("context\n got %s\nwant %s", got, tt.wantCtx)
			}
		})
	}
}

func TestAllows(t *testing.T) {
	if !kitchen.Allows("recognizer_loop:utterance") || !kitchen.Allows("ovos.utterance.handle") || kitchen.Allows("speak") {
		t.Fatal("default allow list wrong")
	}
	if !reflect.DeepEqual(bridge.DefaultAllow, []string{"recognizer_loop:utterance", "ovos.utterance.handle"}) {
		t.Fatal("DefaultAllow changed")
	}
}
