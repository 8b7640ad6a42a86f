package mosquittosync

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
)

// The plugin's control topics (Mosquitto 2.0 plugins/dynamic-security,
// README "Commands"): a message on ControlTopic holds {"commands":[…]}, and
// the plugin answers on ResponseTopic with {"responses":[…]}, one per
// command, in order, each naming its command and echoing its
// correlationData.
const (
	ControlTopic  = "$CONTROL/dynamic-security/v1"
	ResponseTopic = ControlTopic + "/response"
)

// Command is one dynamic-security command. Only the fields a command takes
// are set; the rest are omitted from its JSON.
type Command struct {
	Command   string `json:"command"`
	Username  string `json:"username,omitempty"`
	Password  string `json:"password,omitempty"`
	Rolename  string `json:"rolename,omitempty"`
	Groupname string `json:"groupname,omitempty"`
	TextName  string `json:"textname,omitempty"`

	Roles  []mosquittoexport.RoleRef `json:"roles,omitempty"`
	Groups []GroupRef                `json:"groups,omitempty"`
	ACLs   []mosquittoexport.ACL     `json:"acls,omitempty"`

	// addRoleACL and removeRoleACL: one ACL spelled inline. Priority and
	// Allow are pointers because false and 0 must be sent.
	ACLType  string `json:"acltype,omitempty"`
	Topic    string `json:"topic,omitempty"`
	Priority *int   `json:"priority,omitempty"`
	Allow    *bool  `json:"allow,omitempty"`

	Verbose bool `json:"verbose,omitempty"` // list commands

	CorrelationData string `json:"correlationData,omitempty"`
}

// account is the username a command is about: its client's, or its role's.
func (c Command) account() string {
	if c.Username != "" {
		return c.Username
	}
	u, _ := strings.CutPrefix(c.Rolename, mosquittoexport.RoleName(""))
	return u
}

// GroupRef puts a client in a group (createClient's "groups").
type GroupRef struct {
	Groupname string `json:"groupname"`
	Priority  int    `json:"priority"`
}

// The commands the sync sends.
func createRole(name, textname string, acls []mosquittoexport.ACL) Command {
	if acls == nil {
		acls = []mosquittoexport.ACL{}
	}
	return Command{Command: "createRole", Rolename: name, TextName: textname, ACLs: acls}
}

func deleteRole(name string) Command { return Command{Command: "deleteRole", Rolename: name} }

func addRoleACL(role string, a mosquittoexport.ACL) Command {
	return Command{Command: "addRoleACL", Rolename: role, ACLType: a.ACLType, Topic: a.Topic,
		Priority: &a.Priority, Allow: &a.Allow}
}

func removeRoleACL(role string, a mosquittoexport.ACL) Command {
	return Command{Command: "removeRoleACL", Rolename: role, ACLType: a.ACLType, Topic: a.Topic}
}

func createGroup(name, textname string) Command {
	return Command{Command: "createGroup", Groupname: name, TextName: textname}
}

func createClient(c Client) Command {
	return Command{Command: "createClient", Username: c.Username, Password: c.Password,
		TextName: c.textName(), Roles: []mosquittoexport.RoleRef{{Rolename: mosquittoexport.RoleName(c.Username)}},
		Groups: []GroupRef{{Groupname: mosquittoexport.GroupName(c.Kind)}}}
}

func deleteClient(username string) Command {
	return Command{Command: "deleteClient", Username: username}
}

func setClientPassword(username, password string) Command {
	return Command{Command: "setClientPassword", Username: username, Password: password}
}

// modifyClient sets a client's textname (which records its secret's
// fingerprint); the other fields are left as they are.
func modifyClient(username, textname string) Command {
	return Command{Command: "modifyClient", Username: username, TextName: textname}
}

func addClientRole(username, role string) Command {
	return Command{Command: "addClientRole", Username: username, Rolename: role}
}

func addGroupClient(group, username string) Command {
	return Command{Command: "addGroupClient", Groupname: group, Username: username}
}

// listCommands read the plugin's whole state: every client, role (with
// ACLs) and group, verbose.
func listCommands() []Command {
	return []Command{
		{Command: "listClients", Verbose: true},
		{Command: "listRoles", Verbose: true},
		{Command: "listGroups", Verbose: true},
	}
}

// encode numbers each command "<seq>.<index>" and writes the request.
func encode(seq uint64, cmds []Command) ([]byte, error) {
	numbered := make([]Command, len(cmds))
	for i, c := range cmds {
		c.CorrelationData = correlation(seq, i)
		numbered[i] = c
	}
	b, err := json.Marshal(struct {
		Commands []Command `json:"commands"`
	}{numbered})
	if err != nil {
		return nil, fmt.Errorf("encode dynamic-security commands: %w", err)
	}
	return b, nil
}

func correlation(seq uint64, i int) string {
	return strconv.FormatUint(seq, 10) + "." + strconv.Itoa(i)
}

// Response is the plugin's answer to one command. Error is "" on success.
type Response struct {
	Command         string          `json:"command"`
	Error           string          `json:"error,omitempty"`
	Data            json.RawMessage `json:"data,omitempty"`
	CorrelationData string          `json:"correlationData,omitempty"`
}

func decodeResponses(payload []byte) ([]Response, error) {
	var r struct {
		Responses []Response `json:"responses"`
	}
	if err := json.Unmarshal(payload, &r); err != nil {
		return nil, fmt.Errorf("decode dynamic-security response: %w", err)
	}
	return r.Responses, nil
}
