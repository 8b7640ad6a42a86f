package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
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

func TestSettled(t *testing.T) {
	t.Parallel()
	done := Execution{State: fleet.ExecSucceeded}
	offline := Execution{State: fleet.ExecQueued, Reason: "offline", Blocked: true}
	waiting := Execution{State: fleet.ExecQueued, Reason: "waiting for start rate (2/min)"}
	running := Rollout{State: fleet.RolloutInProgress}
	tests := []struct {
		name string
		d    RolloutDetail
		want bool
	}{
		{"terminal", RolloutDetail{Rollout: Rollout{State: fleet.RolloutSucceeded}}, true},
		{"all ended, not judged yet", RolloutDetail{Rollout: running, Executions: []Execution{done}}, false},
		{"only offline left", RolloutDetail{Rollout: running, Executions: []Execution{done, offline}}, true},
		{"one can still start", RolloutDetail{Rollout: running, Executions: []Execution{offline, waiting}}, false},
		{"counts only", RolloutDetail{Rollout: running}, false},
	}
	for _, tt := range tests {
		if got := tt.d.Settled(); got != tt.want {
			t.Errorf("%s: Settled = %v, want %v", tt.name, got, tt.want)
		}
	}
	if u := (RolloutDetail{Executions: []Execution{done, offline, waiting}}).Unfinished(); len(u) != 2 {
		t.Errorf("Unfinished = %v", u)
	}
}
