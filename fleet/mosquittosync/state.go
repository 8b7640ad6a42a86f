package mosquittosync

import (
	"encoding/json"
	"fmt"

	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
)

// State is what the plugin holds, as its verbose list commands report it.
type State struct {
	Clients map[string]ClientState // by username
	Roles   map[string][]mosquittoexport.ACL
	Groups  map[string]bool
}

// ClientState is one client of the plugin.
type ClientState struct {
	TextName string
	Roles    []string
	Groups   []string
}

// parseState reads the answers to listCommands, in order.
func parseState(rs []Response) (State, error) {
	if len(rs) != 3 {
		return State{}, fmt.Errorf("list: %d responses, want 3", len(rs))
	}
	for _, r := range rs {
		if r.Error != "" {
			return State{}, fmt.Errorf("%s: %s", r.Command, r.Error)
		}
	}
	var clients struct {
		Clients []struct {
			Username string `json:"username"`
			TextName string `json:"textname"`
			Roles    []struct {
				Rolename string `json:"rolename"`
			} `json:"roles"`
			Groups []struct {
				Groupname string `json:"groupname"`
			} `json:"groups"`
		} `json:"clients"`
	}
	var roles struct {
		Roles []struct {
			Rolename string                `json:"rolename"`
			ACLs     []mosquittoexport.ACL `json:"acls"`
		} `json:"roles"`
	}
	var groups struct {
		Groups []struct {
			Groupname string `json:"groupname"`
		} `json:"groups"`
	}
	for i, v := range []any{&clients, &roles, &groups} {
		if err := json.Unmarshal(rs[i].Data, v); err != nil {
			return State{}, fmt.Errorf("%s: %w", rs[i].Command, err)
		}
	}
	s := State{Clients: map[string]ClientState{}, Roles: map[string][]mosquittoexport.ACL{}, Groups: map[string]bool{}}
	for _, c := range clients.Clients {
		cs := ClientState{TextName: c.TextName}
		for _, r := range c.Roles {
			cs.Roles = append(cs.Roles, r.Rolename)
		}
		for _, g := range c.Groups {
			cs.Groups = append(cs.Groups, g.Groupname)
		}
		s.Clients[c.Username] = cs
	}
	for _, r := range roles.Roles {
		s.Roles[r.Rolename] = r.ACLs
	}
	for _, g := range groups.Groups {
		s.Groups[g.Groupname] = true
	}
	return s, nil
}

// holds reports whether the plugin has username as a Chorus client whose
// textname records fingerprint fp, that is, with the password made from
// that secret.
func (s State) holds(username, fp string) bool {
	c, ok := s.Clients[username]
	if !ok || fp == "" {
		return false
	}
	got, chorus := mosquittoexport.ParseClientTextName(c.TextName)
	return chorus && got == fp
}
