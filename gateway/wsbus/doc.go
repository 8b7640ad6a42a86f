// Package wsbus serves the OVOS websocket message bus on top of one device's
// MQTT bus: a drop-in for ovos-messagebus, so unmodified OVOS services and
// skills on the device keep connecting to ws://127.0.0.1:8181, each on its
// route (BUS.md §3; auth.go).
//
// What a websocket client sees is what ovos-messagebus does
// (reference/ovos-behaviour.md §3.3):
//   - on open, the greeting {"type":"connected",…} as the first frame;
//   - one Message per text frame, in both directions;
//   - every valid frame it sends is published on the device's MQTT bus, and
//     every message on that bus is sent to every client, the sender included,
//     exactly once: the sender's echo comes back through the MQTT
//     subscription, never locally;
//   - a malformed, binary or oversized frame is dropped and logged and the
//     connection stays up; a malformed message is never relayed (MSG-1 §6.1);
//   - on shutdown, and when a client is too slow, the TCP connection is
//     dropped without a close frame, because ovos-bus-client never
//     reconnects after a clean close.
//
// Security (ARCHITECTURE.md §6: "an identity is an account"): no connection
// gets the device's authority by connecting. The route is the credential
// (auth.go): the device's OVOS services connect on a secret route the agent
// writes into their mycroft.conf, from a loopback socket owned by an allowed
// uid, and speak with the device's authority; a skill connects on its own
// route and is relayed over an MQTT connection with its own credentials, so
// the broker's skill policy (management types, forged context.skill_id,
// payload caps, rate limits) applies exactly as on MQTT and it reads only what
// it could read there; any other route, the stock /core included, is refused
// with 403 before the upgrade. Like ovos-messagebus it accepts any Origin
// (OVOS clients send none). Frames over SmallFrame share one frame budget, so
// memory stays bounded whatever the number of clients.
package wsbus
