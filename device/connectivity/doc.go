// Package connectivity watches what a satellite can reach and reports
// changes as the OVOS connectivity events the skill manager gates on
// (SKILL_MANAGER §5): mycroft.network.connected / .disconnected from the
// network interfaces, and mycroft.internet.connected / .disconnected from an
// HTTP check of configured URLs.
//
// The agent runs these monitors itself so a device with no PHAL
// connectivity plugin still gates correctly. Everything that touches the
// outside world is injected (the interface lister, the HTTP client, the
// clock), so tests never reach beyond loopback. No URL is built in: with
// none configured the internet is reported down, with that reason, and no
// request is ever made.
package connectivity
