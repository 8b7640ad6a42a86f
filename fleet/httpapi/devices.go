package httpapi

import (
	"net/http"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
)

func (s *Server) view(r *http.Request, d *fleet.Device) (api.Device, error) {
	want, err := s.cfg.Fleet.DesiredOf(r.Context(), d.ID)
	if err != nil {
		return api.Device{}, err
	}
	return api.NewDevice(d, want), nil
}

func (s *Server) listDevices(w http.ResponseWriter, r *http.Request) {
	f := fleet.DeviceFilter{Tag: r.URL.Query().Get("tag")}
	if r.URL.Query().Get("online") != "" {
		online, err := boolQuery(r, "online", false)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		f.Online = &online
	}
	ds, err := s.cfg.Fleet.ListDevices(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := api.DevicesResponse{Devices: make([]api.Device, 0, len(ds))}
	for _, d := range ds {
		v, err := s.view(r, d)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out.Devices = append(out.Devices, v)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) addDevice(w http.ResponseWriter, r *http.Request) {
	var req api.AddDeviceRequest
	if err := decodeJSON(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	d, creds, err := s.cfg.Fleet.AddDevice(r.Context(), actor, req.ID, req.Tags)
	if err != nil && creds.Password != "" {
		// The outcome is unknown: the error goes back with the credentials,
		// which the client keeps (docs/api.md).
		writeErrorCredentials(w, s.cfg.Logger, r, err, creds)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.answerEnrolled(w, r, http.StatusCreated, d, creds)
}

// answerEnrolled answers a device with its credentials, shown only here.
// The device is stored: a failure to compute its view (its desired
// document, a write on a full disk) must not turn the answer into an
// error that loses the one-time secret (issue 16 §7), so the view then
// goes without the desired document's figures.
func (s *Server) answerEnrolled(w http.ResponseWriter, r *http.Request, status int, d *fleet.Device, creds configs.AgentCredentials) {
	v, err := s.view(r, d)
	if err != nil {
		s.cfg.Logger.Warn("device stored; its desired document could not be read for the answer", "device", d.ID, "error", err)
		v = api.NewDevice(d, fleet.Desired{})
	}
	writeJSON(w, status, api.Enrolled{Device: v, Credentials: creds})
}

func (s *Server) answerDevice(w http.ResponseWriter, r *http.Request, d *fleet.Device) {
	want, err := s.cfg.Fleet.DesiredOf(r.Context(), d.ID)
	v := api.NewDeviceDetail(d, want)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.DeviceResponse{Device: v})
}

func (s *Server) getDevice(w http.ResponseWriter, r *http.Request) {
	d, err := s.cfg.Fleet.GetDevice(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.answerDevice(w, r, d)
}

func (s *Server) removeDevice(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Fleet.RemoveDevice(r.Context(), actor, r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) setTags(w http.ResponseWriter, r *http.Request) {
	var req api.TagsRequest
	if err := decodeJSON(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Tags == nil {
		req.Tags = []string{}
	}
	d, err := s.cfg.Fleet.SetTags(r.Context(), actor, r.PathValue("id"), req.Tags)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.answerDevice(w, r, d)
}

func (s *Server) rotateDevice(w http.ResponseWriter, r *http.Request) {
	d, creds, err := s.cfg.Fleet.RotateDevice(r.Context(), actor, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.answerEnrolled(w, r, http.StatusOK, d, creds)
}
