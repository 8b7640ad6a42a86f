package envelope

// copyMap deep-copies a JSON-shaped map. A nil map copies to an empty one, so
// the result is always safe to write.
func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyValue(v)
	}
	return out
}

// copyValue deep-copies objects and arrays; other values (strings, numbers,
// booleans, null) are immutable and returned as they are. Values of other Go
// types, which Decode never produces, are returned unchanged.
func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		return copyMap(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyValue(e)
		}
		return out
	case []string:
		return append([]string(nil), v...)
	}
	return v
}
