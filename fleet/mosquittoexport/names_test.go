package mosquittoexport

import (
	"strings"
	"testing"

	"github.com/chorus-edge/chorus/broker"
)

func TestClientTextName(t *testing.T) {
	for _, c := range []struct {
		name, textname, fp string
		chorus             bool
	}{
		{"with fingerprint", ClientTextName("device", "0123abcd"), "0123abcd", true},
		{"controller", ClientTextName("controller", ""), "", true},
		{"older export", "chorus skill", "", true},
		{"operator's own", "Dynsec admin user", "", false},
		{"bare prefix", "chorus ", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if fp, chorus := ParseClientTextName(c.textname); fp != c.fp || chorus != c.chorus {
				t.Errorf("ParseClientTextName(%q) = %q, %v; want %q, %v", c.textname, fp, chorus, c.fp, c.chorus)
			}
		})
	}
}

// A fingerprint changes with the secret and the key version and does not
// carry the stored hash, which keys the derived skill passwords.
func TestFingerprint(t *testing.T) {
	h := broker.HashSecret("secret")
	fp := Fingerprint(h, 1)
	if fp == Fingerprint(broker.HashSecret("other"), 1) || fp == Fingerprint(h, 2) || fp != Fingerprint(h, 1) {
		t.Errorf("fingerprints do not follow the secret and key version")
	}
	if strings.Contains(h, fp) {
		t.Errorf("fingerprint %s is part of the stored hash", fp)
	}
	dev := broker.DeviceAccount("pi-1", h, nil, 3)
	if got := AccountFingerprint(broker.SkillAccount("pi-1", "hello"), &dev); got != Fingerprint(h, 3) {
		t.Errorf("skill fingerprint %s, want its device's secret and key version", got)
	}
}
