// Package gateway holds nothing itself: its subpackages are what the device
// side (device/) and the fleet side (fleet/) share.
//
// The contracts, each defined once and used by both ends:
//   - envelope: the OVOS Message as it travels on MQTT (BUS.md);
//   - topic: the topic tree's names and their parsers (docs/topics.md);
//   - mqttmsg: the MQTT application message (broker.Message, bus.Packet);
//   - state: the retained birth, connectivity and skills payloads;
//   - desired: the desired-state document a device applies;
//   - artifact: the skill archive format;
//   - skillcred: the skill MQTT credential forms.
//
// The runtime both sides use: bus (the OVOS bus client over MQTT), wsbus
// (the OVOS websocket drop-in), bridge (satellite-to-hub relay), advertise
// (the URLs devices are given), dirlock (one process per data dir),
// atomicfile and privatedb (durable, private files).
//
// The `chorus gateway` process itself is assembled in fleet/gatewayd; the
// agent in device/agent.
package gateway
