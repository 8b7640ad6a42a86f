// Package wsbus serves the OVOS websocket message bus on top of one device's
// MQTT bus: a drop-in for ovos-messagebus, so unmodified OVOS services and
// skills on the device keep connecting to ws://127.0.0.1:8181/core (BUS.md §3).
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
// Security (ARCHITECTURE.md §6): the endpoint has no authentication and, like
// ovos-messagebus, accepts any Origin (OVOS clients send none). Whatever
// connects speaks on the MQTT bus with the device's own authority, so the
// device is the trust boundary: the server listens on loopback by default,
// and exposing it on another interface exposes the device's bus.
package wsbus
