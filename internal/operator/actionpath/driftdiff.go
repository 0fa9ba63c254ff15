package actionpath

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// What counts as drift, for warn mode: a field the release rendered whose
// value on the API server differs, or an object that is gone. Fields the
// chart does not render (defaults, status, what other controllers add) are
// not compared; of metadata only labels and annotations are. Lists of
// elements that all have a name are matched by name, as Kubernetes merges
// containers, ports and volumes; other lists by position.

// driftedFields returns the paths of the fields of expected (a rendered
// object) that live (the object on the API server) does not match.
func driftedFields(expected, live map[string]any) []string {
	var out []string
	expected, live = comparable(expected), comparable(live)
	for _, k := range sortedKeys(expected) {
		if k == "apiVersion" || k == "kind" || k == "status" {
			continue
		}
		diffValue(k, expected[k], live[k], &out)
	}
	return out
}

// comparable returns the parts of obj that drift compares: metadata reduced
// to labels and annotations, and for a Secret its stringData folded into
// data (the API server stores only data).
func comparable(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	if meta, ok := obj["metadata"].(map[string]any); ok {
		m := map[string]any{}
		for _, k := range []string{"labels", "annotations"} {
			if v, ok := meta[k]; ok {
				m[k] = v
			}
		}
		out["metadata"] = m
	}
	if obj["kind"] == "Secret" {
		if sd, ok := obj["stringData"].(map[string]any); ok {
			data := map[string]any{}
			if d, ok := obj["data"].(map[string]any); ok {
				for k, v := range d {
					data[k] = v
				}
			}
			for k, v := range sd {
				if s, ok := v.(string); ok {
					data[k] = base64.StdEncoding.EncodeToString([]byte(s))
				}
			}
			delete(out, "stringData")
			out["data"] = data
		}
	}
	return out
}

func diffValue(path string, exp, live any, out *[]string) {
	switch e := exp.(type) {
	case nil:
		return
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			if len(e) > 0 || live != nil {
				*out = append(*out, path)
			}
			return
		}
		for _, k := range sortedKeys(e) {
			diffValue(path+"."+k, e[k], l[k], out)
		}
	case []any:
		l, ok := live.([]any)
		if !ok {
			if len(e) > 0 || live != nil {
				*out = append(*out, path)
			}
			return
		}
		diffList(path, e, l, out)
	default:
		if !scalarEqual(exp, live) {
			*out = append(*out, path)
		}
	}
}

func diffList(path string, exp, live []any, out *[]string) {
	if names, ok := elementNames(exp); ok {
		byName := map[string]any{}
		if liveNames, ok := elementNames(live); ok {
			for i, n := range liveNames {
				byName[n] = live[i]
			}
		}
		for i, n := range names {
			p := path + "[" + n + "]"
			l, found := byName[n]
			if !found {
				*out = append(*out, p)
				continue
			}
			diffValue(p, exp[i], l, out)
		}
		return
	}
	if len(exp) != len(live) {
		*out = append(*out, path)
		return
	}
	for i := range exp {
		if _, isMap := exp[i].(map[string]any); !isMap {
			if !scalarEqual(exp[i], live[i]) {
				*out = append(*out, path)
				return
			}
			continue
		}
		diffValue(path+"["+strconv.Itoa(i)+"]", exp[i], live[i], out)
	}
}

// elementNames returns the name of every element of list, if each is a map
// with a string name.
func elementNames(list []any) ([]string, bool) {
	if len(list) == 0 {
		return nil, false
	}
	names := make([]string, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		n, ok := m["name"].(string)
		if !ok {
			return nil, false
		}
		names[i] = n
	}
	return names, true
}

// scalarEqual compares two scalars, numbers by value whatever their Go type.
func scalarEqual(a, b any) bool {
	fa, aNum := number(a)
	fb, bNum := number(b)
	if aNum && bNum {
		return fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// removeFields deletes the fields at paths from obj, in place.
func removeFields(obj map[string]any, paths []watchconfig.FieldPath) {
	for _, p := range paths {
		removeField(obj, p)
	}
}

func removeField(v any, path watchconfig.FieldPath) {
	m, ok := v.(map[string]any)
	if !ok || len(path) == 0 {
		return
	}
	step, rest := path[0], path[1:]
	child, ok := m[step.Key]
	if !ok {
		return
	}
	if !step.HasSelect {
		if len(rest) == 0 {
			delete(m, step.Key)
			return
		}
		removeField(child, rest)
		return
	}
	switch c := child.(type) {
	case map[string]any:
		for k := range c {
			if step.Select != "*" && step.Select != k {
				continue
			}
			if len(rest) == 0 {
				delete(c, k)
			} else {
				removeField(c[k], rest)
			}
		}
	case []any:
		kept := c[:0:0]
		for _, e := range c {
			selected := step.Select == "*"
			if em, ok := e.(map[string]any); ok && em["name"] == step.Select {
				selected = true
			}
			switch {
			case !selected:
				kept = append(kept, e)
			case len(rest) > 0:
				removeField(e, rest)
				kept = append(kept, e)
			}
		}
		m[step.Key] = kept
	}
}

// describeObject names an object in drift messages: Kind name.
func describeObject(kind, namespace, name string) string {
	if namespace == "" {
		return fmt.Sprintf("%s %s", kind, name)
	}
	return fmt.Sprintf("%s %s/%s", kind, namespace, name)
}
