package controller

import (
	"bytes"
	"encoding/json"
	"math"

	"github.com/chorus-edge/chorus/fleet"
)

// report is the part of the skills topic payload the controller reads
// (docs/topics.md); unknown fields are ignored.
type report struct {
	AppliedVersion int64         `json:"applied_version"`
	Skills         []skillReport `json:"skills"`
}

type skillReport struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	State   string `json:"state"`
	Managed bool   `json:"managed"`
	Error   string `json:"error"`
}

// Skill states of the skills topic that the reconciler acts on.
const (
	stateLoaded  = "loaded"
	stateFailed  = "failed"
	stateInvalid = "invalid"
)

// parseReport reads a skills payload; an empty one (a cleared retained
// topic) is the empty report. Anything but a JSON object within
// fleet.MaxStatePayload is refused, as the store would refuse it.
func parseReport(payload []byte) (report, error) {
	var r report
	if len(payload) == 0 {
		return r, nil
	}
	// Unmarshal checks the whole document; the first byte tells an object
	// (null, an array or a string would decode into nothing without error).
	if len(payload) > fleet.MaxStatePayload {
		return r, fleet.Errorf(fleet.EINVALID, "skills report: %d bytes, more than the limit of %d", len(payload), fleet.MaxStatePayload)
	}
	if t := bytes.TrimLeft(payload, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return r, fleet.Errorf(fleet.EINVALID, "skills report: not a JSON object")
	}
	if err := json.Unmarshal(payload, &r); err != nil {
		return r, fleet.Errorf(fleet.EINVALID, "skills report: %v", err)
	}
	if r.AppliedVersion < 0 {
		return r, fleet.Errorf(fleet.EINVALID, "skills report: applied_version %d is negative", r.AppliedVersion)
	}
	return r, nil
}

func (r report) skill(id string) (skillReport, bool) {
	for _, s := range r.Skills {
		if s.ID == id {
			return s, true
		}
	}
	return skillReport{}, false
}

func marshalDetail(v any) (json.RawMessage, error) { return json.Marshal(v) }

// maxBirthPayload is the broker's cap on a birth payload (docs/security.md).
const maxBirthPayload = 4 << 10

// parseAvailability reads an availability payload: online or offline.
func parseAvailability(payload []byte) (online bool, err error) {
	switch string(payload) {
	case "online":
		return true, nil
	case "offline":
		return false, nil
	}
	return false, fleet.Errorf(fleet.EINVALID, "availability %q: want online or offline", truncate(string(payload), 32))
}

// parseBirth reads a birth payload: a JSON object whose session fits the
// store's signed 64-bit column.
func parseBirth(payload []byte) (birthPayload, error) {
	var b birthPayload
	if len(payload) == 0 {
		return b, fleet.Errorf(fleet.EINVALID, "birth: empty payload")
	}
	if err := fleet.ValidJSONObject("birth", payload, maxBirthPayload); err != nil {
		return b, err
	}
	if err := json.Unmarshal(payload, &b); err != nil {
		return b, fleet.Errorf(fleet.EINVALID, "birth: %v", err)
	}
	if b.Session > math.MaxInt64 {
		return b, fleet.Errorf(fleet.EINVALID, "birth: session %d out of range", b.Session)
	}
	return b, nil
}

// parseConnectivity checks a connectivity payload, which is stored verbatim:
// a JSON object within fleet.MaxStatePayload.
func parseConnectivity(payload []byte) error {
	if len(payload) == 0 {
		return fleet.Errorf(fleet.EINVALID, "connectivity: empty payload")
	}
	return fleet.ValidJSONObject("connectivity", payload, fleet.MaxStatePayload)
}
