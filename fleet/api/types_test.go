package api

import (
	"encoding/json"
	"testing"
	"time"
)

func TestDurationJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: `"10m"`, want: 10 * time.Minute},
		{in: `""`},
		{in: `null`},
		{in: `90000000000`, want: 90 * time.Second},
		{in: `"soon"`, wantErr: true},
		{in: `true`, wantErr: true},
	}
	for _, tt := range tests {
		var d Duration
		err := json.Unmarshal([]byte(tt.in), &d)
		if (err != nil) != tt.wantErr || time.Duration(d) != tt.want {
			t.Errorf("%s: got %v (%v), want %v (error %v)", tt.in, time.Duration(d), err, tt.want, tt.wantErr)
		}
	}
	b, _ := json.Marshal(Strategy{Timeout: Duration(90 * time.Second)})
	if string(b) != `{"timeout":"1m30s"}` {
		t.Errorf("strategy = %s, want only the timeout, as text", b)
	}
}

func TestParseConnectivity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw    string
		wantOK bool
	}{
		{raw: "", wantOK: false},
		{raw: "null", wantOK: false},
		{raw: "{}", wantOK: false},
		{raw: "[1]", wantOK: false},
		{raw: `{"network": true}`, wantOK: true},
		{raw: `{"network": false, "internet": false, "gui": false, "source": "monitor"}`, wantOK: true},
	}
	for _, tt := range tests {
		if _, ok := (Device{Connectivity: json.RawMessage(tt.raw)}).ParseConnectivity(); ok != tt.wantOK {
			t.Errorf("%q: ok = %v, want %v", tt.raw, ok, tt.wantOK)
		}
	}
}
