package controller

import (
	"encoding/json"
	"strings"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/state"
)

// report is the part of the skills topic payload the controller reads
// (docs/topics.md); unknown fields are ignored.
// Skill states of the skills topic that the reconciler acts on.
const (
	stateLoaded  = state.Loaded
	stateWaiting = state.Waiting
	stateFailed  = state.Failed
	stateInvalid = state.Invalid
)

// parseReport reads a skills payload (gateway/state); an empty one (a
// cleared retained topic) is the empty report.
func parseReport(payload []byte) (state.Skills, error) {
	r, err := state.ParseSkills(payload)
	return r, invalidState(err)
}

// invalidState makes gateway/state's refusal the store's EINVALID.
func invalidState(err error) error {
	if err == nil {
		return nil
	}
	return fleet.Errorf(fleet.EINVALID, "%s", strings.TrimPrefix(err.Error(), state.ErrInvalid.Error()+": "))
}

func marshalDetail(v any) (json.RawMessage, error) { return json.Marshal(v) }

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

// parseBirth reads a birth payload (gateway/state).
func parseBirth(payload []byte) (state.Birth, error) {
	b, err := state.ParseBirth(payload)
	return b, invalidState(err)
}

// parseConnectivity checks a connectivity payload, which is stored verbatim.
func parseConnectivity(payload []byte) error {
	_, err := state.ParseConnectivity(payload)
	return invalidState(err)
}
