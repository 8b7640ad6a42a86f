package httpapi

import (
	"net/http"

	"github.com/chorus-edge/chorus/fleet"
)

func (s *Server) view(r *http.Request, d *fleet.Device) (deviceView, error) {
	want, err := s.cfg.Fleet.DesiredOf(r.Context(), d.ID)
	if err != nil {
		return deviceView{}, err
	}
	return newDeviceView(d, want), nil
}

func (s *Server) listDevices(w http.ResponseWriter, r *http.Request) {
	f := fleet.DeviceFilter{Tag: r.URL.Query().Get("tag")}
	ds, err := s.cfg.Fleet.ListDevices(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]deviceView, 0, len(ds))
	for _, d := range ds {
		v, err := s.view(r, d)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"devices": out})
}

func (s *Server) addDevice(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID   string   `json:"id"`
		Tags []string `json:"tags"`
	}
	if err := decodeJSON(w, r, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	d, creds, err := s.cfg.Fleet.AddDevice(r.Context(), actor, req.ID, req.Tags)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.answerDevice(w, r, http.StatusCreated, d, creds)
}

func (s *Server) answerDevice(w http.ResponseWriter, r *http.Request, status int, d *fleet.Device, creds any) {
	v, err := s.view(r, d)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body := map[string]any{"device": v}
	if creds != nil {
		body["credentials"] = creds
	}
	writeJSON(w, status, body)
}

func (s *Server) getDevice(w http.ResponseWriter, r *http.Request) {
	d, err := s.cfg.Fleet.GetDevice(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.answerDevice(w, r, http.StatusOK, d, nil)
}

func (s *Server) removeDevice(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Fleet.RemoveDevice(r.Context(), actor, r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) setTags(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tags []string `json:"tags"`
	}
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
	s.answerDevice(w, r, http.StatusOK, d, nil)
}

func (s *Server) rotateDevice(w http.ResponseWriter, r *http.Request) {
	d, creds, err := s.cfg.Fleet.RotateDevice(r.Context(), actor, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.answerDevice(w, r, http.StatusOK, d, creds)
}
