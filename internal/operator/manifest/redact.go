package manifest

import (
	"encoding/base64"
	"regexp"
	"sort"
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
	if strings.TrimSpace(doc) == "" || !maySpell(doc, "Secret") {
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

// maySpell reports whether a YAML document may hold the string word as a
// value: it holds it literally, or it has an escape sequence (a
// double-quoted "\u0053ecret") or a tag (!!binary) that could spell it.
// Folding a plain or block scalar only ever adds spaces or newlines. Most
// documents of a release are no Secret, and this answers them without
// parsing them.
func maySpell(doc, word string) bool {
	return strings.Contains(doc, word) || strings.ContainsAny(doc, `\!`)
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

// minRedactedLength is the shortest Secret value RedactText looks for: a
// shorter one ("1", "no") would blank out ordinary words of the text
// while protecting nothing a guess would not find.
const minRedactedLength = 4

// SecretValues returns the values of the Secrets in manifest (data
// decoded from base64, and stringData), each once, longest first, for
// RedactText.
func SecretValues(manifest string) []string {
	seen := map[string]bool{}
	_, _ = mapDocuments(manifest, func(doc string) (string, error) {
		var obj map[string]interface{}
		if strings.TrimSpace(doc) == "" || yaml.Unmarshal([]byte(doc), &obj) != nil || obj == nil {
			return doc, nil
		}
		collectSecretValues(obj, seen)
		return doc, nil
	})
	return sortedValues(seen)
}

// DataValues returns the values of a Secret's data, each once, longest
// first, for RedactText.
func DataValues(data map[string][]byte) []string {
	seen := map[string]bool{}
	for _, v := range data {
		seen[string(v)] = true
	}
	return sortedValues(seen)
}

func collectSecretValues(obj map[string]interface{}, seen map[string]bool) {
	switch obj["kind"] {
	case "Secret":
		if data, ok := obj["data"].(map[string]interface{}); ok {
			for _, v := range data {
				if s, ok := v.(string); ok {
					if raw, err := base64.StdEncoding.DecodeString(s); err == nil {
						seen[string(raw)] = true
					}
				}
			}
		}
		if data, ok := obj["stringData"].(map[string]interface{}); ok {
			for _, v := range data {
				if s, ok := v.(string); ok {
					seen[s] = true
				}
			}
		}
	case "List":
		items, _ := obj["items"].([]interface{})
		for _, item := range items {
			if m, ok := item.(map[string]interface{}); ok {
				collectSecretValues(m, seen)
			}
		}
	}
}

// sortedValues lists the keys of seen of at least minRedactedLength
// bytes, longest first (so a value that contains another is replaced
// whole), and each line of a value of several lines on its own too: a
// log is read line by line.
func sortedValues(seen map[string]bool) []string {
	all := map[string]bool{}
	for v := range seen {
		all[strings.TrimSpace(v)] = true
		for _, line := range strings.Split(v, "\n") {
			all[strings.TrimSpace(line)] = true
		}
	}
	out := make([]string, 0, len(all))
	for v := range all {
		if len(v) >= minRedactedLength {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

// RedactText returns text with every occurrence of each of values
// replaced by [RedactedValue]. values is what SecretValues or DataValues
// returned, or several such lists joined.
func RedactText(text string, values []string) string {
	seen := map[string]bool{}
	for _, v := range values {
		seen[v] = true
	}
	for _, v := range sortedValues(seen) {
		text = strings.ReplaceAll(text, v, RedactedValue)
	}
	return text
}
