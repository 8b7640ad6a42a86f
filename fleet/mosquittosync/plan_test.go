package mosquittosync

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
)

// The command JSON of Mosquitto 2.0's dynamic-security plugin (plugins/
// dynamic-security README, "Commands"), as sent on ControlTopic.
func TestEncode(t *testing.T) {
	dev := Client{Username: "pi-1", Kind: "device", Fingerprint: "ab12", Password: "s3cret",
		ACLs: []mosquittoexport.ACL{{ACLType: "publishClientSend", Topic: "chorus/v1/pi-1/#", Allow: true}}}
	deny := mosquittoexport.ACL{ACLType: "publishClientSend", Topic: "chorus/v1/pi-1/bus/x", Priority: 10}
	for _, c := range []struct {
		name string
		cmd  Command
		want string
	}{
		{"createClient", createClient(dev),
			`{"command":"createClient","username":"pi-1","password":"s3cret","textname":"chorus device fp:ab12","roles":[{"rolename":"chorus:pi-1","priority":0}],"groups":[{"groupname":"chorus-devices","priority":0}],"correlationData":"7.0"}`},
		{"createRole", createRole("chorus:pi-1", "chorus device pi-1", dev.ACLs),
			`{"command":"createRole","rolename":"chorus:pi-1","textname":"chorus device pi-1","acls":[{"acltype":"publishClientSend","topic":"chorus/v1/pi-1/#","priority":0,"allow":true}],"correlationData":"7.0"}`},
		{"addRoleACL deny", addRoleACL("chorus:pi-1", deny),
			`{"command":"addRoleACL","rolename":"chorus:pi-1","acltype":"publishClientSend","topic":"chorus/v1/pi-1/bus/x","priority":10,"allow":false,"correlationData":"7.0"}`},
		{"removeRoleACL", removeRoleACL("chorus:pi-1", deny),
			`{"command":"removeRoleACL","rolename":"chorus:pi-1","acltype":"publishClientSend","topic":"chorus/v1/pi-1/bus/x","correlationData":"7.0"}`},
		{"setClientPassword", setClientPassword("pi-1", "n3w"),
			`{"command":"setClientPassword","username":"pi-1","password":"n3w","correlationData":"7.0"}`},
		{"deleteClient", deleteClient("pi-1"), `{"command":"deleteClient","username":"pi-1","correlationData":"7.0"}`},
		{"listClients", listCommands()[0], `{"command":"listClients","verbose":true,"correlationData":"7.0"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := encode(7, []Command{c.cmd})
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"commands":[` + c.want + `]}`; string(b) != want {
				t.Errorf("got  %s\nwant %s", b, want)
			}
		})
	}
}

// stateFixture is the answer of Mosquitto 2.0.11 to listCommands (captured
// from /usr/sbin/mosquitto): the bootstrap admin, and pi-1 as the sync left it.
const stateFixture = `{"responses":[
{"command":"listClients","data":{"totalCount":2,"clients":[
 {"username":"admin","textname":"Dynsec admin user","roles":[{"rolename":"admin"}],"groups":[]},
 {"username":"pi-1","textname":"chorus device fp:ab12","roles":[{"rolename":"chorus:pi-1"}],"groups":[{"groupname":"chorus-devices"}]}]},"correlationData":"3.0"},
{"command":"listRoles","data":{"totalCount":2,"roles":[
 {"rolename":"admin","acls":[{"acltype":"publishClientSend","topic":"$CONTROL/dynamic-security/#","priority":0,"allow":true}]},
 {"rolename":"chorus:pi-1","textname":"t","acls":[{"acltype":"publishClientSend","topic":"chorus/v1/pi-1/#","priority":0,"allow":true},{"acltype":"subscribePattern","topic":"chorus/v1/pi-1/#","priority":0,"allow":true}]}]},"correlationData":"3.1"},
{"command":"listGroups","data":{"totalCount":1,"groups":[{"groupname":"chorus-devices","textname":"x","clients":[{"username":"pi-1"}],"roles":[]}]},"correlationData":"3.2"}]}`

func fixtureState(t *testing.T) State {
	t.Helper()
	rs, err := decodeResponses([]byte(stateFixture))
	if err != nil {
		t.Fatal(err)
	}
	s, err := parseState(rs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseState(t *testing.T) {
	s := fixtureState(t)
	if c := s.Clients["pi-1"]; c.TextName != "chorus device fp:ab12" || !slices.Equal(c.Roles, []string{"chorus:pi-1"}) || !slices.Equal(c.Groups, []string{"chorus-devices"}) {
		t.Errorf("pi-1 = %+v", c)
	}
	if len(s.Clients) != 2 || len(s.Roles["chorus:pi-1"]) != 2 || !s.Groups["chorus-devices"] {
		t.Errorf("state = %+v", s)
	}
	if _, err := parseState([]Response{{Command: "listClients", Error: "Permission denied"}, {}, {}}); err == nil {
		t.Error("an error answer parsed")
	}
}

func TestDiff(t *testing.T) {
	acls := []mosquittoexport.ACL{
		{ACLType: "publishClientSend", Topic: "chorus/v1/pi-1/#", Allow: true},
		{ACLType: "subscribePattern", Topic: "chorus/v1/pi-1/#", Allow: true},
	}
	pi1 := Client{Username: "pi-1", Kind: "device", Fingerprint: "ab12", ACLs: acls}
	skill := Client{Username: "skill:pi-1:hello", Kind: "skill", Fingerprint: "cd34", Password: "d1.x",
		ACLs: []mosquittoexport.ACL{{ACLType: "publishClientSend", Topic: "chorus/v1/pi-1/bus/+", Allow: true}}}
	with := func(c Client, f func(*Client)) Client { f(&c); return c }
	for _, c := range []struct {
		name    string
		desired []Client
		want    []string // "command subject"
		set     []string
		missing []string
		stale   []string
	}{
		{name: "in step", desired: []Client{pi1}},
		{name: "new skill", desired: []Client{pi1, skill},
			want: []string{"createGroup chorus-skills", "createRole chorus:skill:pi-1:hello", "createClient skill:pi-1:hello"},
			set:  []string{"skill:pi-1:hello"}},
		{name: "device gone: its client and role", desired: nil,
			want: []string{"deleteClient pi-1", "deleteRole chorus:pi-1"}},
		{name: "rotated, new secret known",
			desired: []Client{with(pi1, func(c *Client) { c.Fingerprint, c.Password = "ef56", "n3w" })},
			want:    []string{"setClientPassword pi-1", "modifyClient pi-1"}, set: []string{"pi-1"}},
		{name: "rotated, new secret unknown: the old one is revoked",
			desired: []Client{with(pi1, func(c *Client) { c.Fingerprint = "ef56" })},
			want:    []string{"deleteClient pi-1"}, stale: []string{"pi-1"}},
		{name: "absent, secret unknown",
			desired: []Client{pi1, {Username: "integration:ha", Kind: "integration", Fingerprint: "99"}},
			missing: []string{"integration:ha"}},
		{name: "absent, secret known", desired: []Client{pi1, {Username: "integration:ha", Kind: "integration", Fingerprint: "99", Password: "p"}},
			want: []string{"createGroup chorus-integrations", "createRole chorus:integration:ha", "createClient integration:ha"},
			set:  []string{"integration:ha"}},
		{name: "ACL changed: grant lifts a denial, subscribe narrowed",
			desired: []Client{with(pi1, func(c *Client) {
				c.ACLs = []mosquittoexport.ACL{acls[0], {ACLType: "publishClientReceive", Topic: "chorus/v1/pi-1/#", Allow: true}}
			})},
			want: []string{"addRoleACL chorus:pi-1", "removeRoleACL chorus:pi-1"}},
		{name: "ACL priority changed", desired: []Client{with(pi1, func(c *Client) {
			c.ACLs = []mosquittoexport.ACL{{ACLType: "publishClientSend", Topic: "chorus/v1/pi-1/#", Priority: 10}, acls[1]}
		})}, want: []string{"removeRoleACL chorus:pi-1", "addRoleACL chorus:pi-1"}},
		{name: "self is never touched", desired: []Client{pi1, {Username: "admin", Kind: "operator", Password: "x"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := diff(c.desired, fixtureState(t), "admin")
			var got []string
			for _, cmd := range p.Commands {
				got = append(got, cmd.Command+" "+cmd.Username+cmd.Rolename+cmd.Groupname)
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if !slices.Equal(p.Set, c.set) || !slices.Equal(p.Missing, c.missing) || !slices.Equal(p.Stale, c.stale) {
				t.Errorf("set %v missing %v stale %v; want %v %v %v", p.Set, p.Missing, p.Stale, c.set, c.missing, c.stale)
			}
		})
	}
}

// Clients Chorus did not write (no "chorus " textname), the controller's
// and other roles survive a sync; a Chorus client without a fingerprint (an
// older file export) keeps its password.
func TestDiffLeavesOthersAlone(t *testing.T) {
	s := fixtureState(t)
	s.Clients["operator-made"] = ClientState{TextName: "by hand"}
	s.Clients["controller"] = ClientState{TextName: mosquittoexport.ClientTextName("controller", ""), Roles: []string{"chorus:controller"}}
	s.Roles["chorus:controller"] = nil
	s.Clients["pi-1"] = ClientState{TextName: "chorus device", Roles: []string{"chorus:pi-1"}, Groups: []string{"chorus-devices"}}
	pi1 := Client{Username: "pi-1", Kind: "device", Fingerprint: "ab12", ACLs: s.Roles["chorus:pi-1"]}
	if p := diff([]Client{pi1}, s, "admin"); len(p.Commands) != 0 {
		b, _ := json.Marshal(p.Commands)
		t.Errorf("commands %s", b)
	}
}
