package manifest

import (
	"math"
	"strconv"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// MarshalObject returns obj, an object's content as JSON decoding leaves
// it (unstructured.Unstructured's), as YAML: byte for byte what
// sigs.k8s.io/yaml's Marshal returns for it, which is how the library's
// owner post-renderer wrote every rendered object, and so how the
// manifest of every release it stored reads.
//
// That Marshal encodes obj as JSON, parses the JSON as YAML and encodes
// what it parsed: a second parse of every object, a fifth of what an
// upgrade allocated. The result depends only on the values the parse
// yields, and for the types JSON decoding yields those are obj's own,
// with two exceptions that yamlValue rewrites: a float with an integral
// value is written by JSON without a fraction and parsed back as an
// integer, and a nil map or list is written as null. Anything else (a
// type JSON decoding never yields, or a string the YAML parser refuses)
// goes through that Marshal itself, error included.
func MarshalObject(obj map[string]any) ([]byte, error) {
	if !plainYAML(obj) {
		v, ok := yamlValue(obj)
		if !ok {
			return yaml.Marshal(obj)
		}
		return yamlv2.Marshal(v)
	}
	return yamlv2.Marshal(obj)
}

// plainYAML reports whether v needs no rewrite (yamlValue) to be
// written directly: no integral float, no nil map or list, only the types
// JSON decoding yields, and only strings the YAML parser reads.
func plainYAML(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		if t == nil {
			return false
		}
		for k, x := range t {
			if !parsableString(k) || !plainYAML(x) {
				return false
			}
		}
		return true
	case []any:
		if t == nil {
			return false
		}
		for _, x := range t {
			if !plainYAML(x) {
				return false
			}
		}
		return true
	case string:
		return parsableString(t)
	case float64:
		return t != math.Trunc(t) || math.IsInf(t, 0)
	case nil, bool, int64, int:
		return true
	}
	return false
}

// yamlValue returns v as the JSON round trip of sigs.k8s.io/yaml's
// Marshal leaves it, and false when v holds what only that Marshal can
// judge.
func yamlValue(v any) (any, bool) {
	switch t := v.(type) {
	case map[string]any:
		if t == nil {
			return nil, true
		}
		out := make(map[string]any, len(t))
		for k, x := range t {
			if !parsableString(k) {
				return nil, false
			}
			y, ok := yamlValue(x)
			if !ok {
				return nil, false
			}
			out[k] = y
		}
		return out, true
	case []any:
		if t == nil {
			return nil, true
		}
		out := make([]any, len(t))
		for i, x := range t {
			y, ok := yamlValue(x)
			if !ok {
				return nil, false
			}
			out[i] = y
		}
		return out, true
	case string:
		return t, parsableString(t)
	case float64:
		return integralFloat(t), !math.IsNaN(t) && !math.IsInf(t, 0)
	case nil, bool, int64, int:
		return t, true
	}
	return nil, false
}

// integralFloat returns f as the YAML parser reads JSON's text of it. An
// integral value below 1e21 is written as its shortest digits padded with
// zeros ('f' format), which parse as an int64 when they fit, else as a
// uint64 when they fit, else as the float again.
func integralFloat(f float64) any {
	if f != math.Trunc(f) || math.Abs(f) >= 1e21 {
		return f
	}
	text := strconv.FormatFloat(f, 'f', -1, 64)
	if i, err := strconv.ParseInt(text, 10, 64); err == nil {
		return i
	}
	if u, err := strconv.ParseUint(text, 10, 64); err == nil {
		return u
	}
	return f
}

// parsableString reports whether the YAML parser reads s, as JSON writes
// it, back as s. JSON escapes the control characters below U+0020, U+2028
// and U+2029, and writes every other character as it is; the parser
// refuses DEL, the C1 controls, U+FFFE and U+FFFF, but NEL (U+0085), which
// it reads as a line break, folded into a space.
func parsableString(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < utf8.RuneSelf {
			if b == 0x7f {
				return false
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r >= 0x80 && r <= 0x9f) || r == 0xfffe || r == 0xffff {
			return false
		}
		i += size - 1
	}
	return true
}
