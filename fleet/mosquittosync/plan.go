package mosquittosync

import (
	"maps"
	"slices"
	"strings"

	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
)

// Client is one account as the plugin should hold it: the same client, role
// and group the file export writes (mosquittoexport.RenderDynSec).
type Client struct {
	Username string
	Kind     string // broker.Role: device, skill, integration, operator
	// Fingerprint names the secret the account's current password is made
	// from (mosquittoexport.AccountFingerprint); the client's textname
	// records it.
	Fingerprint string
	// Password is the plaintext when it can be set now: a skill's derived
	// password, a local account's, or a secret handed over at add or rotate
	// time. "" when only the existing client can carry it.
	Password string
	ACLs     []mosquittoexport.ACL
}

func (c Client) textName() string { return mosquittoexport.ClientTextName(c.Kind, c.Fingerprint) }

// Plan is what takes the plugin's state to the desired one.
type Plan struct {
	Commands []Command
	// Set lists the clients whose password the commands set (created, or
	// re-set after a rotation).
	Set []string
	// Missing lists the desired clients the plugin lacks and whose password
	// is unknown: they cannot be created until rotated or exported.
	Missing []string
	// Stale lists the clients whose password was made from an older secret
	// (their fingerprint differs) and whose new password is unknown: the
	// plan deletes them, so the old secret stops working.
	Stale []string
}

// diff plans the commands from s to desired. It never touches self (the
// sync's own account) nor a client Chorus did not write (its textname is not
// mosquittoexport.ClientTextName's), and leaves controller clients alone.
// Order: groups and roles before the clients that name them; deletions last.
func diff(desired []Client, s State, self string) Plan {
	var p Plan
	var groups, roles, clients, deletes []Command
	want := map[string]bool{self: true}
	made := map[string]bool{} // groups created by this plan
	sorted := slices.Clone(desired)
	slices.SortFunc(sorted, func(a, b Client) int { return strings.Compare(a.Username, b.Username) })
	for _, d := range sorted {
		if want[d.Username] {
			continue // self, or a duplicate
		}
		want[d.Username] = true
		cur, exists := s.Clients[d.Username]
		if !exists && d.Password == "" {
			p.Missing = append(p.Missing, d.Username)
			continue
		}
		if g := mosquittoexport.GroupName(d.Kind); !s.Groups[g] && !made[g] {
			made[g] = true
			groups = append(groups, createGroup(g, "Chorus "+d.Kind+" accounts"))
		}
		roles = append(roles, roleCommands(d, s.Roles)...)
		if !exists {
			clients = append(clients, createClient(d))
			p.Set = append(p.Set, d.Username)
			continue
		}
		if fp, _ := mosquittoexport.ParseClientTextName(cur.TextName); fp != d.Fingerprint {
			switch {
			case d.Password != "":
				clients = append(clients, setClientPassword(d.Username, d.Password), modifyClient(d.Username, d.textName()))
				p.Set = append(p.Set, d.Username)
			case fp != "":
				deletes = append(deletes, deleteClient(d.Username))
				p.Stale = append(p.Stale, d.Username)
				continue
			}
		}
		if r := mosquittoexport.RoleName(d.Username); !slices.Contains(cur.Roles, r) {
			clients = append(clients, addClientRole(d.Username, r))
		}
		if g := mosquittoexport.GroupName(d.Kind); !slices.Contains(cur.Groups, g) {
			clients = append(clients, addGroupClient(g, d.Username))
		}
	}
	deletes = append(deletes, orphans(s, want)...)
	p.Commands = slices.Concat(groups, roles, clients, deletes)
	return p
}

// roleCommands creates d's role, or brings its ACLs to d.ACLs: an ACL is
// keyed by type and topic, and one whose priority or allow changed is
// removed and added again.
func roleCommands(d Client, roles map[string][]mosquittoexport.ACL) []Command {
	name := mosquittoexport.RoleName(d.Username)
	cur, ok := roles[name]
	if !ok {
		return []Command{createRole(name, "chorus "+d.Kind+" "+d.Username, d.ACLs)}
	}
	type key struct{ typ, topic string }
	have := map[key]mosquittoexport.ACL{}
	for _, a := range cur {
		have[key{a.ACLType, a.Topic}] = a
	}
	var out []Command
	wanted := map[key]bool{}
	for _, a := range d.ACLs {
		k := key{a.ACLType, a.Topic}
		wanted[k] = true
		h, ok := have[k]
		if ok && h.Priority == a.Priority && h.Allow == a.Allow {
			continue
		}
		if ok {
			out = append(out, removeRoleACL(name, h))
		}
		out = append(out, addRoleACL(name, a))
	}
	for _, a := range cur {
		if !wanted[key{a.ACLType, a.Topic}] {
			out = append(out, removeRoleACL(name, a))
		}
	}
	return out
}

// orphans deletes the Chorus clients and roles no desired account names
// (want): a removed device, its skills, a removed integration or operator.
func orphans(s State, want map[string]bool) []Command {
	var out []Command
	controllers := map[string]bool{}
	for _, u := range slices.Sorted(maps.Keys(s.Clients)) {
		c := s.Clients[u]
		if c.TextName == mosquittoexport.ClientTextName("controller", "") {
			controllers[u] = true
			continue
		}
		if _, chorus := mosquittoexport.ParseClientTextName(c.TextName); chorus && !want[u] {
			out = append(out, deleteClient(u))
		}
	}
	for _, r := range slices.Sorted(maps.Keys(s.Roles)) {
		u, ok := strings.CutPrefix(r, mosquittoexport.RoleName(""))
		if ok && !want[u] && !controllers[u] {
			out = append(out, deleteRole(r))
		}
	}
	return out
}
