package controller

import (
	"encoding/json"

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

func parseReport(payload []byte) (report, error) {
	var r report
	if len(payload) == 0 {
		return r, nil
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
