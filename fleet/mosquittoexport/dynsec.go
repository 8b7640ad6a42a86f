package mosquittoexport

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/chorus-edge/chorus/broker"
)

// DynSec is the configuration file of Mosquitto 2's dynamic-security plugin
// (plugin_opt_config_file): clients with a PBKDF2-SHA512 hash, roles with
// ACLs, groups, and the default access when no ACL matches. Its usernames
// may hold ':', so unlike the password file it carries every Chorus role.
// The field names are the plugin's (mosquitto plugins/dynamic-security,
// clients.c, roles.c, groups.c config_load).
type DynSec struct {
	DefaultACLAccess DefaultACLAccess `json:"defaultACLAccess"`
	Clients          []DynClient      `json:"clients"`
	Groups           []DynGroup       `json:"groups"`
	Roles            []DynRole        `json:"roles"`
}

// DefaultACLAccess applies when no role's ACL matches. Chorus denies all but
// unsubscribing: every delivery must match a publishClientReceive ACL, as
// the embedded broker re-checks each delivery against the subscribe filters.
type DefaultACLAccess struct {
	PublishClientSend    bool `json:"publishClientSend"`
	PublishClientReceive bool `json:"publishClientReceive"`
	Subscribe            bool `json:"subscribe"`
	Unsubscribe          bool `json:"unsubscribe"`
}

// DynClient is one username. Password and Salt are base64; the plugin
// verifies PBKDF2-HMAC-SHA512(password, salt, Iterations), as Hash computes.
type DynClient struct {
	Username   string    `json:"username"`
	TextName   string    `json:"textname,omitempty"`
	Password   string    `json:"password"`
	Salt       string    `json:"salt"`
	Iterations int       `json:"iterations"`
	Roles      []RoleRef `json:"roles"`
}

// RoleRef attaches a role to a client or a group.
type RoleRef struct {
	Rolename string `json:"rolename"`
	Priority int    `json:"priority"`
}

// DynGroup groups clients; Chorus uses one group per role kind, without
// roles of its own, so `mosquitto_ctrl dynsec getGroup chorus-skills` lists
// the skills.
type DynGroup struct {
	Groupname string      `json:"groupname"`
	TextName  string      `json:"textname,omitempty"`
	Roles     []RoleRef   `json:"roles"`
	Clients   []GroupUser `json:"clients"`
}

// GroupUser is a group member.
type GroupUser struct {
	Username string `json:"username"`
	Priority int    `json:"priority"`
}

// DynRole is a set of ACLs. The plugin checks a role's ACLs from the highest
// priority down and the first whose topic matches decides.
type DynRole struct {
	Rolename string `json:"rolename"`
	TextName string `json:"textname,omitempty"`
	ACLs     []ACL  `json:"acls"`
}

// ACL is one rule: AclType is publishClientSend, publishClientReceive,
// subscribePattern, subscribeLiteral, unsubscribePattern or
// unsubscribeLiteral; Topic a topic filter.
type ACL struct {
	ACLType  string `json:"acltype"`
	Topic    string `json:"topic"`
	Priority int    `json:"priority"`
	Allow    bool   `json:"allow"`
}

// The dynamic-security ACL types Chorus writes.
const (
	PublishClientSend    = "publishClientSend"
	PublishClientReceive = "publishClientReceive"
	SubscribePattern     = "subscribePattern"
)

// denyPriority puts a role's denials before its grants.
const denyPriority = 10

// DynSecFile is one dynamic-security export.
type DynSecFile struct {
	JSON []byte // the plugin's config file
	// Skipped lists, one line each, the accounts left out and why.
	Skipped []string
}

// RenderDynSec writes the accounts of the table as a dynamic-security
// config. hashes maps a device, integration or operator username to its Hash
// (as for Render); an account without one is skipped. Skill accounts
// (broker.RoleSkill, as Table.Lookup derives them) get the derived-form
// password of gateway/skillcred, computed from their device's account in the
// same list, so their agent must mint that form (skills.credentials
// "derived"). Superusers get every topic and the plugin's control topic, so
// the controller can keep the file current over $CONTROL/dynamic-security/v1.
func RenderDynSec(accounts []broker.Account, hashes map[string]string, supers ...Superuser) (DynSecFile, error) {
	r := dynRenderer{groups: map[string]*DynGroup{}, seen: map[string]bool{}}
	for _, s := range supers {
		if err := r.super(s); err != nil {
			return DynSecFile{}, err
		}
	}
	devices := map[string]*broker.Account{}
	for i := range accounts {
		if a := &accounts[i]; a.Role == broker.RoleDevice {
			devices[a.Device] = a
		}
	}
	sorted := slices.Clone(accounts)
	slices.SortFunc(sorted, func(a, b broker.Account) int { return strings.Compare(a.Username, b.Username) })
	for _, a := range sorted {
		if err := r.account(a, hashes, devices); err != nil {
			return DynSecFile{}, err
		}
	}
	body, err := json.MarshalIndent(r.file(), "", "  ")
	if err != nil {
		return DynSecFile{}, fmt.Errorf("dynamic-security export: %w", err)
	}
	return DynSecFile{JSON: append(body, '\n'), Skipped: r.skipped}, nil
}

type dynRenderer struct {
	clients []DynClient
	roles   []DynRole
	groups  map[string]*DynGroup
	seen    map[string]bool
	skipped []string
}

func (r *dynRenderer) super(s Superuser) error {
	if s.Username == "" {
		return fmt.Errorf("dynamic-security export: empty superuser name")
	}
	pw, err := parseHash(s.Hash)
	if err != nil {
		return fmt.Errorf("superuser %q: %w", s.Username, err)
	}
	var acls []ACL
	for _, f := range []string{"#", "$CONTROL/dynamic-security/#"} {
		acls = append(acls, allow(PublishClientSend, f), allow(PublishClientReceive, f), allow(SubscribePattern, f))
	}
	r.add(s.Username, "controller", "", pw, acls)
	return nil
}

func (r *dynRenderer) account(a broker.Account, hashes map[string]string, devices map[string]*broker.Account) error {
	if r.seen[a.Username] {
		r.skipped = append(r.skipped, a.Username+": shadowed by a superuser of the same name")
		return nil
	}
	var pw DynClient
	var err error
	dev := devices[a.Device]
	if a.Role == broker.RoleSkill {
		if dev == nil {
			r.skipped = append(r.skipped, a.Username+": its device is not in the table")
			return nil
		}
		pw, err = skillPassword(dev, a.Skill)
	} else {
		if hashes[a.Username] == "" {
			r.skipped = append(r.skipped, a.Username+": no Mosquitto hash recorded for its current secret (rotate it to record one)")
			return nil
		}
		pw, err = parseHash(hashes[a.Username])
	}
	if err != nil {
		return fmt.Errorf("dynamic-security export: %s: %w", a.Username, err)
	}
	r.add(a.Username, string(a.Role), AccountFingerprint(a, dev), pw, AccountACLs(a))
	return nil
}

// add records a client, its own role and its group membership; fp is the
// fingerprint of the secret its password is made from.
func (r *dynRenderer) add(username, kind, fp string, pw DynClient, acls []ACL) {
	r.seen[username] = true
	role := RoleName(username)
	pw.Username, pw.TextName = username, ClientTextName(kind, fp)
	pw.Roles = []RoleRef{{Rolename: role}}
	r.clients = append(r.clients, pw)
	r.roles = append(r.roles, DynRole{Rolename: role, TextName: "chorus " + kind + " " + username, ACLs: acls})
	g := r.groups[kind]
	if g == nil {
		g = &DynGroup{Groupname: GroupName(kind), TextName: "Chorus " + kind + " accounts", Roles: []RoleRef{}}
		r.groups[kind] = g
	}
	g.Clients = append(g.Clients, GroupUser{Username: username})
}

func (r *dynRenderer) file() DynSec {
	f := DynSec{
		DefaultACLAccess: DefaultACLAccess{Unsubscribe: true},
		Clients:          r.clients,
		Roles:            r.roles,
		Groups:           []DynGroup{},
	}
	for _, g := range r.groups {
		f.Groups = append(f.Groups, *g)
	}
	slices.SortFunc(f.Groups, func(a, b DynGroup) int { return strings.Compare(a.Groupname, b.Groupname) })
	if f.Clients == nil {
		f.Clients = []DynClient{}
	}
	if f.Roles == nil {
		f.Roles = []DynRole{}
	}
	return f
}

// KnownManagementTypes are the management and state bus types the Chorus
// agent acts on or answers with (device/skillmanager, device/agent). A topic
// ACL cannot express a "prefix*" pattern of broker.SkillDenyTypes (an MQTT
// filter matches whole levels and the type is one level), so the export
// denies these literally, plus each pattern's base type: a skill on Mosquitto
// cannot steer its own agent, but may emit other types under the prefixes
// that the embedded broker refuses (docs/security.md).
var KnownManagementTypes = []string{
	"skillmanager.rescan", "skillmanager.list", "skillmanager.keep",
	"skillmanager.activate", "skillmanager.deactivate",
	"ovos.pip.install", "ovos.pip.install.complete", "ovos.pip.install.failed",
	"ovos.pip.uninstall", "ovos.pip.uninstall.complete", "ovos.pip.uninstall.failed",
	"ovos.skills.install", "ovos.skills.install.complete", "ovos.skills.install.failed",
	"ovos.skills.uninstall", "ovos.skills.uninstall.complete", "ovos.skills.uninstall.failed",
	"mycroft.network.connected", "mycroft.network.disconnected",
	"mycroft.internet.connected", "mycroft.internet.disconnected",
	"mycroft.gui.available", "mycroft.gui.unavailable",
}

// AccountACLs expresses an account's row of the matrix: its publish filters,
// its subscribe filters for SUBSCRIBE and for every delivery, and, above
// them, a denial of each bus type of literalDenials.
func AccountACLs(a broker.Account) []ACL {
	var acls []ACL
	for _, t := range literalDenials(a) {
		for _, f := range a.Publish {
			if bus, ok := strings.CutSuffix(f, "/bus/+"); ok {
				acls = append(acls, ACL{ACLType: PublishClientSend, Topic: bus + "/bus/" + t, Priority: denyPriority})
			}
		}
	}
	for _, f := range a.Publish {
		acls = append(acls, allow(PublishClientSend, f))
	}
	for _, f := range a.Subscribe {
		acls = append(acls, allow(SubscribePattern, f), allow(PublishClientReceive, f))
	}
	return acls
}

// literalDenials lists the bus types a topic ACL can name for a.DenyTypes:
// each exact type, each pattern's base type ("ovos.skills.install*" names
// ovos.skills.install; "skillmanager.*" none) and each of
// KnownManagementTypes it covers, less those a.AllowTypes grants.
func literalDenials(a broker.Account) []string {
	if len(a.DenyTypes) == 0 {
		return nil
	}
	var cands []string
	for _, d := range a.DenyTypes {
		if t, prefix := strings.CutSuffix(d, "*"); t != "" && !(prefix && strings.HasSuffix(t, ".")) {
			cands = append(cands, t)
		}
	}
	cands = append(cands, KnownManagementTypes...)
	var out []string
	for _, t := range cands {
		if typeListed(a.DenyTypes, t) && !typeListed(a.AllowTypes, t) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// typeListed reports whether a type or "prefix*" pattern of list names t
// (broker's rule for DenyTypes and AllowTypes).
func typeListed(list []string, t string) bool {
	for _, d := range list {
		if p, prefix := strings.CutSuffix(d, "*"); prefix && strings.HasPrefix(t, p) || t == d {
			return true
		}
	}
	return false
}

func allow(aclType, topic string) ACL {
	return ACL{ACLType: aclType, Topic: topic, Allow: true}
}

// skillPassword hashes the derived-form password of skill on dev.
func skillPassword(dev *broker.Account, skill string) (DynClient, error) {
	pw, err := SkillPassword(dev, skill)
	if err != nil {
		return DynClient{}, err
	}
	h, err := Hash(pw)
	if err != nil {
		return DynClient{}, err
	}
	return parseHash(h)
}

// parseHash turns a Hash result into the plugin's password, salt and
// iterations: the same PBKDF2-SHA512, spelled as three fields.
func parseHash(h string) (DynClient, error) {
	parts := strings.Split(h, "$")
	if len(parts) != 5 || parts[0] != "" || parts[1] != "7" {
		return DynClient{}, fmt.Errorf("want a $7$ hash")
	}
	iter, err := strconv.Atoi(parts[2])
	if err != nil || iter <= 0 {
		return DynClient{}, fmt.Errorf("bad iteration count in hash")
	}
	salt, err := base64.StdEncoding.DecodeString(parts[3])
	if err != nil || len(salt) != saltLen { // the plugin of Mosquitto 2.0 takes exactly 12 bytes
		return DynClient{}, fmt.Errorf("hash salt must be %d bytes", saltLen)
	}
	dk, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(dk) != hashLen {
		return DynClient{}, fmt.Errorf("hash must be %d bytes", hashLen)
	}
	return DynClient{Password: parts[4], Salt: parts[3], Iterations: iter}, nil
}

// FindPlugin returns the path of the installed dynamic-security plugin
// (Debian: /usr/lib/<triplet>/mosquitto_dynamic_security.so), or "".
func FindPlugin() string {
	for _, pattern := range []string{
		"/usr/lib/*/mosquitto_dynamic_security.so",
		"/usr/lib/mosquitto_dynamic_security.so",
		"/usr/local/lib/mosquitto_dynamic_security.so",
		"/usr/local/lib/*/mosquitto_dynamic_security.so",
	} {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return m[0]
		}
	}
	return ""
}
