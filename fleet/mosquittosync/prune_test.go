package mosquittosync

import (
	"testing"

	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
)

// A secret handed over by SetSecret is forgotten once the plugin holds it,
// even when the pass that pushed it never learnt so: the createClient's
// answer was lost, or another command for the account was refused. The
// later passes find the client with the secret's fingerprint and set
// nothing.
func TestPruneForgetsSecretThePluginHolds(t *testing.T) {
	ha := Client{Username: "integration:ha", Kind: "integration", Fingerprint: "99",
		ACLs: []mosquittoexport.ACL{{ACLType: "publishClientSend", Topic: "ha/#", Allow: true}}}
	pi1 := Client{Username: "pi-1", Kind: "device", Fingerprint: "ab12", ACLs: fixtureState(t).Roles["chorus:pi-1"]}
	lost := func(Command) bool { return true }
	none := func(Command) bool { return false }
	roleRefused := func(c Command) bool { return c.Rolename != "" }
	for _, c := range []struct {
		name string
		// refused picks the commands of each pass the plugin refused (or
		// whose answer was lost); the passes after the first find the client.
		refused []func(Command) bool
		kept    []bool // the secret is still held after each pass
	}{
		{"answer of createClient lost", []func(Command) bool{lost, none}, []bool{true, false}},
		{"role refused, then accepted", []func(Command) bool{roleRefused, roleRefused, none}, []bool{true, true, false}},
		{"created at once", []func(Command) bool{none}, []bool{false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Syncer{secrets: map[string]secret{}}
			s.SetSecret(ha.Username, ha.Fingerprint, "p")
			st := fixtureState(t)
			for i, refused := range c.refused {
				if i > 0 { // the plugin applied the first pass's createClient
					st.Clients[ha.Username] = ClientState{TextName: ha.textName(), Groups: []string{"chorus-integrations"}}
				}
				failed := prunePass(s, []Client{pi1, ha}, st, refused)
				if _, ok := s.secrets[ha.Username]; ok != c.kept[i] {
					t.Errorf("pass %d (refused %v): secret held %v, want %v", i+1, failed, ok, c.kept[i])
				}
			}
		})
	}
}

// A secret the plugin does not hold yet is kept: the listed client was made
// from an older secret, and the re-set was refused.
func TestPruneKeepsSecretOfRefusedRotation(t *testing.T) {
	pi1 := Client{Username: "pi-1", Kind: "device", Fingerprint: "ef56", ACLs: fixtureState(t).Roles["chorus:pi-1"]}
	s := &Syncer{secrets: map[string]secret{}}
	s.SetSecret(pi1.Username, pi1.Fingerprint, "n3w")
	for range 2 {
		prunePass(s, []Client{pi1}, fixtureState(t), func(c Command) bool { return c.Command == "setClientPassword" })
	}
	if _, ok := s.secrets[pi1.Username]; !ok {
		t.Error("secret forgotten before the plugin held it")
	}
}

// prunePass is reconcile without the I/O: desired against the listed state
// st, the commands refused picks failing.
func prunePass(s *Syncer, desired []Client, st State, refused func(Command) bool) map[string]bool {
	secrets := s.secretsSnapshot()
	withSecrets(desired, secrets)
	p := diff(desired, st, "admin")
	failed := map[string]bool{}
	for _, cmd := range p.Commands {
		if refused(cmd) {
			failed[cmd.account()] = true
		}
	}
	s.prune(secrets, desired, st, p.Set, failed)
	return failed
}
