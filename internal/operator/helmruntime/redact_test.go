package helmruntime

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// manifestWithSecret is a release manifest with a Secret.
const manifestWithSecret = `---
# Source: app/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: "hunter2hunter2"
  username: app
data:
  token: c2VjcmV0LXRva2Vu
`

func TestRedactStatusOnlyTouchesTheManifest(t *testing.T) {
	g := NewWithT(t)
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"password": "spec-is-the-user's"},
		"status": map[string]any{
			"conditions":      []any{map[string]any{"type": "Deployed", "status": "True"}},
			"deployedRelease": map[string]any{"name": "web", "manifest": manifestWithSecret},
		},
	}}
	redactStatus(u)
	manifest, _, _ := unstructured.NestedString(u.Object, "status", "deployedRelease", "manifest")
	g.Expect(manifest).NotTo(ContainSubstring("hunter2hunter2"))
	g.Expect(manifest).To(ContainSubstring("password: REDACTED"))
	g.Expect(u.Object["spec"]).To(Equal(map[string]any{"password": "spec-is-the-user's"}))
	g.Expect(u.Object["status"]).To(HaveKeyWithValue("conditions", HaveLen(1)))
	name, _, _ := unstructured.NestedString(u.Object, "status", "deployedRelease", "name")
	g.Expect(name).To(Equal("web"))

	// Objects without a release manifest are left alone.
	empty := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{}}}
	redactStatus(empty)
	g.Expect(empty.Object).To(Equal(map[string]any{"status": map[string]any{}}))
	g.Expect(strings.Count(manifest, "REDACTED")).To(Equal(3))
}
