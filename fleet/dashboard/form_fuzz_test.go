package dashboard

import (
	"net/url"
	"testing"

	"github.com/chorus-edge/chorus/fleet"
)

// FuzzRolloutForm: any form body either is refused with an invalid-input
// error or gives a rollout whose targets and strategy validate.
func FuzzRolloutForm(f *testing.F) {
	f.Add("action=install&target=tags&targets=kitchen+hall&canary=1&timeout=90s")
	f.Add("action=uninstall&target=devices&targets=pi-1,pi-2&max_in_flight=5&failure_threshold_pct=20&min_executed=3")
	f.Add("action=install&target=all&failure_threshold_pct=NaN")
	f.Add("action=install&target=all&rate=10&deadline=2h")
	f.Add("action=install&target=all&rate=-3")
	f.Add("action=install&target=tags&targets=")
	f.Add("action=remove&target=all")
	f.Fuzz(func(t *testing.T, body string) {
		form, err := url.ParseQuery(body)
		if err != nil {
			return
		}
		ro, err := parseRolloutForm(form)
		if err != nil {
			if fleet.ErrorCode(err) != fleet.EINVALID {
				t.Fatalf("%q: error %v is not invalid-input", body, err)
			}
			return
		}
		if len(ro.Targets) == 0 {
			t.Fatalf("%q: accepted with no target", body)
		}
		for _, tg := range ro.Targets {
			if err := tg.Validate(); err != nil {
				t.Fatalf("%q: accepted target %v: %v", body, tg, err)
			}
		}
		if err := ro.Strategy.Validate(); err != nil {
			t.Fatalf("%q: accepted strategy: %v", body, err)
		}
	})
}
