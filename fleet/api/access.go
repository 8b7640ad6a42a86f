package api

import (
	"encoding/json"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
)

// Integrations and operators cross the wire as fleet.Integration and
// fleet.Operator (their secret hashes never do).

// NewIntegration is i with its allow list [] rather than null.
func NewIntegration(i *fleet.Integration) fleet.Integration {
	v := *i
	v.Allow = nonNil(v.Allow)
	return v
}

// IntegrationsResponse is GET /v1/integrations.
type IntegrationsResponse struct {
	Integrations []fleet.Integration `json:"integrations"`
}

// IntegrationRequest is POST /v1/integrations.
type IntegrationRequest struct {
	Name  string   `json:"name"`
	Allow []string `json:"allow"`
}

// IntegrationAdded is the 201 answer: the only time the secret is shown.
type IntegrationAdded struct {
	Integration fleet.Integration  `json:"integration"`
	Credentials configs.Credential `json:"credentials"`
}

// OperatorsResponse is GET /v1/operators.
type OperatorsResponse struct {
	Operators []fleet.Operator `json:"operators"`
}

// OperatorRequest is POST /v1/operators.
type OperatorRequest struct {
	Name string `json:"name"`
}

// OperatorAdded is the 201 answer: the only time the secret is shown.
type OperatorAdded struct {
	Operator    fleet.Operator     `json:"operator"`
	Credentials configs.Credential `json:"credentials"`
}

// RoutesResponse is GET /v1/routes, by satellite.
type RoutesResponse struct {
	Routes []fleet.Route `json:"routes"`
}

// RouteRequest is PUT /v1/routes/{satellite}.
type RouteRequest struct {
	Hub                string   `json:"hub"`
	Allow              []string `json:"allow"`
	BlacklistedSkills  []string `json:"blacklisted_skills"`
	BlacklistedIntents []string `json:"blacklisted_intents"`
}

// NewRouteRequest is the request that puts r; its lists [] rather than null.
func NewRouteRequest(r fleet.Route) RouteRequest {
	return RouteRequest{Hub: r.Hub, Allow: nonNil(r.Allow), BlacklistedSkills: nonNil(r.BlacklistedSkills),
		BlacklistedIntents: nonNil(r.BlacklistedIntents)}
}

// Route is the route r.Satellite the request puts.
func (r RouteRequest) Route(satellite string) *fleet.Route {
	return &fleet.Route{Satellite: satellite, Hub: r.Hub, Allow: r.Allow,
		BlacklistedSkills: r.BlacklistedSkills, BlacklistedIntents: r.BlacklistedIntents}
}

// RouteResponse is the answer to PUT /v1/routes/{satellite}.
type RouteResponse struct {
	Route fleet.Route `json:"route"`
}

// GrantsResponse is GET /v1/skill-grants, by skill, the fleet-wide grant first.
type GrantsResponse struct {
	Grants []fleet.SkillGrant `json:"grants"`
}

// GrantRequest is PUT /v1/skill-grants/{skill}; an empty Device is the
// fleet-wide grant.
type GrantRequest struct {
	Device string   `json:"device"`
	Allow  []string `json:"allow"`
}

// GrantResponse is the answer to PUT /v1/skill-grants/{skill}.
type GrantResponse struct {
	Grant fleet.SkillGrant `json:"grant"`
}

// AuditResponse is GET /v1/audit.
type AuditResponse struct {
	Entries []fleet.AuditEntry `json:"entries"`
}

// MosquittoExport is GET /v1/export/mosquitto: a Mosquitto 2 password file
// and ACL file for the fleet, and the accounts they could not express.
type MosquittoExport struct {
	PasswordFile string   `json:"password_file"`
	ACLFile      string   `json:"acl_file"`
	Skipped      []string `json:"skipped"`
}

// MosquittoDynSec is GET /v1/export/mosquitto/dynsec: the config file of
// Mosquitto's dynamic-security plugin and the accounts it could not express.
type MosquittoDynSec struct {
	DynamicSecurity json.RawMessage `json:"dynamic_security"`
	Skipped         []string        `json:"skipped"`
}

// EMQXAuthnResult answers POST /v1/emqx/authn in the shape EMQX's HTTP
// authenticator expects (docs/security.md, "On an external broker").
type EMQXAuthnResult struct {
	Result      string `json:"result"` // "allow" or "deny"
	IsSuperuser bool   `json:"is_superuser"`
}

// EMQXAuthzResult answers POST /v1/emqx/authz.
type EMQXAuthzResult struct {
	Result string `json:"result"` // "allow" or "deny"
}
