package envelope_test

import (
	"testing"

	"github.com/chorus-edge/chorus/gateway/envelope"
)

// benchMessage is a realistic utterance as ovos-bus-client emits it: a
// serialized session of about 1 KB rides in every message (BUS.md §3).
const benchMessage = `{"type":"recognizer_loop:utterance","data":{"utterances":["what is the weather like in lisbon tomorrow"],"lang":"en-US"},` +
	`"context":{"source":"sat-7","destination":["skills"],"utterance_id":"0b6a2f7e-3c51-4a4e-9d7e-6f1f9c7a2b11","client_name":"ovos_dinkum_listener",` +
	`"session":{"session_id":"default","lang":"en-US","site_id":"kitchen","active_skills":[["ovos-skill-weather.openvoiceos",1732906800.253],["ovos-skill-date-time.openvoiceos",1732906700.118]],` +
	`"utterance_states":{"ovos-skill-weather.openvoiceos":"intent"},"context":{"frame_stack":[],"timeout":120},` +
	`"pipeline":["stop_high","converse","ocp_high","padatious_high","adapt_high","ocp_medium","fallback_high","stop_medium","adapt_medium","padatious_medium","adapt_low","common_qa","fallback_medium","fallback_low"],` +
	`"location":{"city":{"code":"Lisbon","name":"Lisbon","state":{"code":"11","name":"Lisbon","country":{"code":"PT","name":"Portugal"}}},` +
	`"coordinate":{"latitude":38.7223,"longitude":-9.1393},"timezone":{"code":"Europe/Lisbon","name":"Western European Time","dstOffset":3600000,"offset":0}},` +
	`"system_unit":"metric","time_format":"full","date_format":"DMY","is_speaking":false,"is_recording":false,` +
	`"blacklisted_skills":[],"blacklisted_intents":[]}}}`

func BenchmarkDecode(b *testing.B) {
	raw := []byte(benchMessage)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := envelope.Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	m, err := envelope.Decode([]byte(benchMessage))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(benchMessage)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := envelope.Encode(m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReply(b *testing.B) {
	m, err := envelope.Decode([]byte(benchMessage))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = m.Reply("speak", nil)
	}
}
