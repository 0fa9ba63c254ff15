package manifest

import (
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

func TestWithOwnershipMetadata(t *testing.T) {
	g := NewWithT(t)
	manifest := `---
# Source: app/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: db
  labels: {team: shop}
  annotations: {helm.sh/resource-policy: keep}
stringData: {password: x}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: c}
---
`
	out, err := WithOwnershipMetadata(manifest, "web", "shop")
	g.Expect(err).NotTo(HaveOccurred())
	docs := documentSeparator.Split(out, -1)
	g.Expect(docs).To(HaveLen(4), out)

	var secret, list map[string]interface{}
	g.Expect(yaml.Unmarshal([]byte(docs[1]), &secret)).To(Succeed())
	g.Expect(secret["metadata"]).To(Equal(map[string]interface{}{
		"name": "db",
		// Existing labels and annotations stay; Helm's are added.
		"labels": map[string]interface{}{"team": "shop", "app.kubernetes.io/managed-by": "Helm"},
		"annotations": map[string]interface{}{
			"helm.sh/resource-policy":        "keep",
			"meta.helm.sh/release-name":      "web",
			"meta.helm.sh/release-namespace": "shop",
		},
	}))
	g.Expect(secret["stringData"]).To(Equal(map[string]interface{}{"password": "x"}))
	g.Expect(yaml.Unmarshal([]byte(docs[2]), &list)).To(Succeed())
	item := list["items"].([]interface{})[0].(map[string]interface{})
	g.Expect(item["metadata"]).To(HaveKeyWithValue("annotations", HaveKeyWithValue("meta.helm.sh/release-name", "web")))

	// Unparseable manifests are an error, not a partial repair.
	_, err = WithOwnershipMetadata("---\nkind: [x\n", "web", "shop")
	g.Expect(err).To(HaveOccurred())
}
