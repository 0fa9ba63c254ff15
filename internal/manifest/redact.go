package manifest

import (
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// RedactedValue replaces every value of a Secret's data and stringData in
// the release manifest a custom resource's status shows.
const RedactedValue = "REDACTED"

// documentSeparator matches the "---" lines between the documents of a
// manifest.
var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// RedactManifest returns manifest with every value under data and
// stringData of its kind: Secret documents replaced by [RedactedValue].
// Other documents are returned byte for byte. A document that cannot be
// parsed is replaced by a comment (it might be a Secret), so nothing is
// leaked through a document the function does not understand.
func RedactManifest(manifest string) string {
	out, _ := mapDocuments(manifest, func(doc string) (string, error) { return redactDocument(doc), nil })
	return out
}

// mapDocuments returns manifest with each of its documents replaced by
// f's answer; the separators stay exactly as they were.
func mapDocuments(manifest string, f func(doc string) (string, error)) (string, error) {
	seps := documentSeparator.FindAllStringIndex(manifest, -1)
	var b strings.Builder
	start := 0
	for _, sep := range append(seps, []int{len(manifest), len(manifest)}) {
		doc, err := f(manifest[start:sep[0]])
		if err != nil {
			return "", err
		}
		b.WriteString(doc)
		b.WriteString(manifest[sep[0]:sep[1]])
		start = sep[1]
	}
	return b.String(), nil
}

// redactDocument redacts one manifest document; see RedactManifest.
func redactDocument(doc string) string {
	if strings.TrimSpace(doc) == "" {
		return doc
	}
	var obj map[string]interface{}
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		return "\n# " + RedactedValue + ": a document that could not be parsed\n"
	}
	if !redactSecrets(obj) {
		return doc
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		return "\n# " + RedactedValue + ": a Secret that could not be rewritten\n"
	}
	// Keep the leading comment lines (Helm's "# Source: <template>").
	var head strings.Builder
	for _, line := range strings.SplitAfter(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			head.WriteString(line)
			continue
		}
		break
	}
	h := head.String()
	if h == "" || !strings.HasSuffix(h, "\n") {
		h += "\n"
	}
	return h + string(out)
}

// redactSecrets redacts obj when it is a Secret, or the Secrets among its
// items when it is a List. It reports whether obj holds a Secret.
func redactSecrets(obj map[string]interface{}) bool {
	switch obj["kind"] {
	case "Secret":
		for _, field := range []string{"data", "stringData"} {
			if values, ok := obj[field].(map[string]interface{}); ok {
				for k := range values {
					values[k] = RedactedValue
				}
			}
		}
		return true
	case "List":
		items, _ := obj["items"].([]interface{})
		found := false
		for _, item := range items {
			if m, ok := item.(map[string]interface{}); ok && redactSecrets(m) {
				found = true
			}
		}
		return found
	}
	return false
}
