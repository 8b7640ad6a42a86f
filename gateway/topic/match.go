package topic

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidFilter matches every error from ValidFilter; ErrInvalidName every
// error from ValidName.
var (
	ErrInvalidFilter = errors.New("invalid topic filter")
	ErrInvalidName   = errors.New("invalid topic name")
)

// Match reports whether the topic name matches the subscription filter
// (MQTT 5 §4.7):
//   - '+' matches exactly one level, including an empty one [MQTT-4.7.1-2];
//   - '#' matches the parent level and any number of child levels, so "a/#"
//     matches "a" and "a/" [MQTT-4.7.1-1];
//   - a topic starting with '$' is not matched by a filter starting with a
//     wildcard [MQTT-4.7.2-1];
//   - levels are compared byte for byte [MQTT-4.7.3-4].
//
// Match is false for a filter with a misplaced wildcard and for a topic
// holding a wildcard, which cannot be a topic name [MQTT-3.3.2-2]; other
// syntax (UTF-8, NUL, length) is for ValidFilter and ValidName to check once
// at SUBSCRIBE or PUBLISH time. Match allocates nothing; the broker's ACL
// calls it on every delivery.
func Match(filter, topic string) bool {
	if filter == "" || topic == "" || strings.ContainsAny(topic, "+#") {
		return false
	}
	if topic[0] == '$' && (filter[0] == '+' || filter[0] == '#') {
		return false
	}
	for {
		flevel, frest, fmore := strings.Cut(filter, "/")
		if flevel == "#" {
			return !fmore // '#' must be the last level [MQTT-4.7.1-1]
		}
		tlevel, trest, tmore := strings.Cut(topic, "/")
		// A malformed filter level ("a+", "#b") never equals a topic level,
		// since topics hold no wildcards.
		if flevel != "+" && flevel != tlevel {
			return false
		}
		switch {
		case !fmore:
			return !tmore
		case !tmore:
			return frest == "#" // "a/#" matches "a"
		}
		filter, topic = frest, trest
	}
}

// ValidFilter checks a subscription filter: 1 to 65535 bytes of UTF-8
// without NUL [MQTT-1.5.4-1, MQTT-1.5.4-2, MQTT-4.7.3-1], '#' only as the
// whole last level [MQTT-4.7.1-1], '+' only as a whole level [MQTT-4.7.1-2].
func ValidFilter(f string) error {
	if err := validString(f); err != nil {
		return fmt.Errorf("filter %q: %s: %w", f, err, ErrInvalidFilter)
	}
	for level := range strings.SplitSeq(f, "/") {
		if strings.ContainsRune(level, '#') && level != "#" {
			return fmt.Errorf("filter %q: '#' must be a whole level: %w", f, ErrInvalidFilter)
		}
		if strings.ContainsRune(level, '+') && level != "+" {
			return fmt.Errorf("filter %q: '+' must be a whole level: %w", f, ErrInvalidFilter)
		}
	}
	if i := strings.IndexByte(f, '#'); i >= 0 && i != len(f)-1 {
		return fmt.Errorf("filter %q: '#' must be the last level: %w", f, ErrInvalidFilter)
	}
	return nil
}

// ValidName checks a topic name for PUBLISH: 1 to 65535 bytes of UTF-8
// without NUL and without wildcards [MQTT-3.3.2-2].
func ValidName(t string) error {
	if err := validString(t); err != nil {
		return fmt.Errorf("topic %q: %s: %w", t, err, ErrInvalidName)
	}
	if strings.ContainsAny(t, "+#") {
		return fmt.Errorf("topic %q: wildcards are not allowed in a topic name: %w", t, ErrInvalidName)
	}
	return nil
}

func validString(s string) error {
	switch {
	case s == "":
		return errors.New("empty")
	case len(s) > maxTopicLen:
		return fmt.Errorf("longer than %d bytes", maxTopicLen)
	case !utf8.ValidString(s):
		return errors.New("not valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		return errors.New("contains NUL")
	}
	return nil
}
