package hadiscovery

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// The config is written by hand instead of by encoding/json over its
// component maps, which was half of Build's time and a large share of the
// garbage of each pass that builds one (docs/benchmarks.md, issue 19). The
// bytes are those encoding/json gives for config with SetEscapeHTML(false)
// and the component keys abbreviated (abbreviate): struct fields in their
// order, omitempty honoured, map keys sorted. TestEncodeMatchesJSON holds
// it to that on inputs with every character class JSON escapes.

// encode returns c as JSON, components abbreviated.
func (c *config) encode() []byte {
	b := make([]byte, 0, 512+384*len(c.Components)) // about what a config takes
	b = append(b, `{"dev":{"ids":[`...)
	for i, id := range c.Device.Identifiers {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, id)
	}
	b = append(b, `],"name":`...)
	b = appendString(b, c.Device.Name)
	b = append(b, `,"mdl":`...)
	b = appendString(b, c.Device.Model)
	if c.Device.SWVersion != "" {
		b = append(b, `,"sw":`...)
		b = appendString(b, c.Device.SWVersion)
	}
	if c.Device.ViaDevice != "" {
		b = append(b, `,"via_device":`...)
		b = appendString(b, c.Device.ViaDevice)
	}
	b = append(b, `},"o":{"name":`...)
	b = appendString(b, c.Origin.Name)
	if c.Origin.SWVersion != "" {
		b = append(b, `,"sw":`...)
		b = appendString(b, c.Origin.SWVersion)
	}
	b = append(b, `,"url":`...)
	b = appendString(b, c.Origin.SupportURL)
	b = append(b, `},"avty_t":`...)
	b = appendString(b, c.AvailabilityTopic)
	b = append(b, `,"pl_avail":`...)
	b = appendString(b, c.PayloadAvailable)
	b = append(b, `,"pl_not_avail":`...)
	b = appendString(b, c.PayloadNotAvailable)
	b = append(b, `,"cmps":`...)
	if c.Components == nil {
		b = append(b, "null"...)
	} else {
		b = appendComponents(b, c.Components)
	}
	return append(b, '}')
}

func appendComponents(b []byte, cmps map[string]component) []byte {
	keys := make([]string, 0, len(cmps))
	for k := range cmps {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendComponent(b, cmps[k])
	}
	return append(b, '}')
}

// appendComponent writes one component with its keys abbreviated
// (abbreviations), in the order encoding/json sorts a map's keys: the
// abbreviated keys' order, written out here.
func appendComponent(b []byte, c component) []byte {
	first := true
	name := func(key string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, key...)
		b = append(b, '"', ':')
	}
	str := func(key, v string) {
		if v != "" {
			name(key)
			b = appendString(b, v)
		}
	}
	b = append(b, '{')
	str("cmd_t", c.CommandTopic)
	str("dev_cla", c.DeviceClass)
	str("ent_cat", c.EntityCategory)
	str("ic", c.Icon)
	str("name", c.Name)
	str("p", c.Platform)
	str("pl_inst", c.PayloadInstall)
	str("pl_off", c.PayloadOff)
	str("pl_on", c.PayloadOn)
	if c.QoS != 0 {
		name("qos")
		b = strconv.AppendInt(b, int64(c.QoS), 10)
	}
	if c.Retain != nil {
		name("ret")
		b = strconv.AppendBool(b, *c.Retain)
	}
	str("stat_cla", c.StateClass)
	str("stat_off", c.StateOff)
	str("stat_on", c.StateOn)
	str("stat_t", c.StateTopic)
	str("uniq_id", c.UniqueID)
	str("val_tpl", c.ValueTemplate)
	return append(b, '}')
}

const hex = "0123456789abcdef"

// appendString writes s as a JSON string the way encoding/json does
// without HTML escaping: '"', '\\' and control characters escaped,
// invalid UTF-8 as \ufffd, U+2028 and U+2029 as \u escapes.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
