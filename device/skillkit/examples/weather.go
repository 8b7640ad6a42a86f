package examples

import (
	"github.com/chorus-edge/chorus/device/skillkit"
)

// Message types and defaults of the weather example.
const (
	TypeWeatherPing = "weather.chorus.ping"
	DefaultUnits    = "metric"
	// Forecast is the example's whole forecast: it requires internet to show
	// connectivity gating, and never touches the network.
	Forecast = "It is sunny in the example forecast."
)

// setupWeather answers weather.chorus.ping with a fixed forecast and the
// units from its settings (read on every request, so a settings change
// applies at once), and logs settings changes.
func setupWeather(s *skillkit.Skill) error {
	if _, err := s.OnSettingsChanged(func() {
		s.Logger().Info("settings changed", "units", units(s))
	}); err != nil {
		return err
	}
	return answer(s, TypeWeatherPing, func() (map[string]any, error) {
		return map[string]any{"forecast": Forecast, "units": units(s)}, nil
	})
}

// units is settings.units, or DefaultUnits when unset or unreadable.
func units(s *skillkit.Skill) string {
	st, err := s.Settings()
	if err != nil {
		s.Logger().Warn("read settings", "err", err)
		return DefaultUnits
	}
	if u, ok := st["units"].(string); ok && u != "" {
		return u
	}
	return DefaultUnits
}
