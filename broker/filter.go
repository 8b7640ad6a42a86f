package broker

import (
	"fmt"
	"strings"
)

// validFilter reports whether f is a well-formed MQTT topic filter
// ([MQTT-4.7.1-1], [MQTT-4.7.1-2]).
func validFilter(f string) error {
	if f == "" {
		return fmt.Errorf("empty topic filter")
	}
	levels := strings.Split(f, "/")
	for i, l := range levels {
		switch {
		case l == "#" && i != len(levels)-1:
			return fmt.Errorf("topic filter %q: '#' must be the last level", f)
		case l != "#" && l != "+" && strings.ContainsAny(l, "#+"):
			return fmt.Errorf("topic filter %q: wildcard inside a level", f)
		case strings.ContainsRune(l, 0):
			return fmt.Errorf("topic filter %q: NUL", f)
		}
	}
	return nil
}

// covers reports whether every topic matched by sub is matched by allowed.
// A plain topic is a filter matching itself, so covers also decides whether an
// allowed filter matches a topic. Filters whose first level is a wildcard never
// cover topics starting with '$' ([MQTT-4.7.2-1]).
func covers(allowed, sub string) bool {
	if strings.HasPrefix(sub, "$") && (strings.HasPrefix(allowed, "+") || strings.HasPrefix(allowed, "#")) {
		return false
	}
	for {
		a, aRest, aMore := strings.Cut(allowed, "/")
		s, sRest, sMore := strings.Cut(sub, "/")
		switch {
		case a == "#":
			return true
		case s == "#":
			return false // only '#' covers '#'
		case a == "+":
			// covers any one level
		case a != s:
			return false
		}
		if !aMore || !sMore {
			// "a/#" also covers "a" [MQTT-4.7.1-2].
			return aMore == sMore || (aMore && aRest == "#")
		}
		allowed, sub = aRest, sRest
	}
}

// coveredBy reports whether any of filters covers sub.
func coveredBy(filters []string, sub string) bool {
	for _, f := range filters {
		if covers(f, sub) {
			return true
		}
	}
	return false
}
