// Package bridge relays OVOS messages between device buses: a satellite's
// utterances cross to a hub device whose skills answer them, and the hub's
// answers addressed to the satellite cross back (OVOS-BRIDGE-1, BUS.md §4,
// seeds/001 §5.8). It also makes topic migration twins (BUS.md §5,
// seeds/001 §5.7).
//
// The rules are pure functions on envelope.Message (Inbound, Outbound,
// Twin) so they can be tested row by row; Relay is the runtime that applies
// them to a Transport in the gateway process. The package knows nothing of
// the fleet registry: the controller hands it the routes.
//
// What crosses, and how (docs/bridging.md):
//   - inbound (satellite → hub): only the route's allowed types; source
//     stamped with the satellite's participant id ("chorus:<satellite>"),
//     overriding any value the satellite sent (BRIDGE-1 §3.1); destination
//     set to "skills" when absent (so the MSG-1 §5.2 reply of a hub skill is
//     addressed back to the participant); the session always present and its
//     id translated to a hub-side id keyed by the satellite (BRIDGE-1 §3.2
//     NAT, "default" never crosses as the hub's own "default"); the route's
//     blacklists merged into the session on every message (BRIDGE-1 §4.1).
//   - outbound (hub → satellite): only messages whose destination names the
//     participant; the session translated back; poll-family messages only to
//     a satellite hosting skills in that session (seeds/001 §5.8).
//   - never: compat twins (each bus makes its own), messages the relay
//     itself published (no cascades), anything for a satellite offline past
//     the grace period (BRIDGE-1 §5).
package bridge
