package helmruntime

import (
	"context"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// RedactedValue replaces every value of a Secret's data and stringData in
// the release manifest a custom resource's status shows.
const RedactedValue = "REDACTED"

// The library copies the whole rendered manifest of the deployed release
// into status.deployedRelease.manifest of the custom resource. Secrets a
// chart renders would then be readable by everyone who may read the custom
// resource (the built-in "view" role may, and may not read Secrets). The
// reconciler therefore gets a client whose status writes redact them; the
// manifest Helm stores in its release Secret, and uses for drift repair, is
// untouched.

// redactingClient is a client.Client whose status writes redact Secret
// values in status.deployedRelease.manifest of unstructured objects.
type redactingClient struct {
	client.Client
}

// NewRedactingClient wraps c so that Status().Update and Status().Patch of
// an unstructured object replace, in its status.deployedRelease.manifest,
// every data and stringData value of kind: Secret documents with
// [RedactedValue]. Everything else goes to c unchanged.
func NewRedactingClient(c client.Client) client.Client {
	return &redactingClient{Client: c}
}

// Status returns a status writer that redacts before writing.
func (c *redactingClient) Status() client.SubResourceWriter {
	return &redactingStatusWriter{SubResourceWriter: c.Client.Status()}
}

type redactingStatusWriter struct {
	client.SubResourceWriter
}

func (w *redactingStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	redactStatus(obj)
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w *redactingStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	redactStatus(obj)
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// redactStatus redacts status.deployedRelease.manifest of obj in place when
// obj is unstructured and has one.
func redactStatus(obj client.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	manifest, found, err := unstructured.NestedString(u.Object, "status", "deployedRelease", "manifest")
	if err != nil || !found {
		return
	}
	_ = unstructured.SetNestedField(u.Object, RedactManifest(manifest), "status", "deployedRelease", "manifest")
}

// documentSeparator matches the "---" lines between the documents of a
// manifest.
var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// RedactManifest returns manifest with every value under data and
// stringData of its kind: Secret documents replaced by [RedactedValue].
// Other documents are returned byte for byte. A document that cannot be
// parsed is replaced by a comment (it might be a Secret), so nothing is
// leaked through a document the function does not understand.
func RedactManifest(manifest string) string {
	// FindAllStringIndex + slicing keeps the separators exactly as they were.
	seps := documentSeparator.FindAllStringIndex(manifest, -1)
	var b strings.Builder
	start := 0
	for _, sep := range seps {
		b.WriteString(redactDocument(manifest[start:sep[0]]))
		b.WriteString(manifest[sep[0]:sep[1]])
		start = sep[1]
	}
	b.WriteString(redactDocument(manifest[start:]))
	return b.String()
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
