package actionpath

import (
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

const renderedDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  template:
    metadata:
      annotations: {checksum: abc}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        args: [a, b]
        resources: {limits: {cpu: 100m}}
      - name: exporter
        image: exporter:1
`

// TestDriftedFields: fields the chart rendered are compared with the live
// object; what the API server or others add is not drift.
func TestDriftedFields(t *testing.T) {
	g := NewWithT(t)
	live := obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  uid: 123
  resourceVersion: "9"
  labels: {app: web, extra: yes}
  annotations: {deployment.kubernetes.io/revision: "1"}
spec:
  replicas: 2
  strategy: {type: RollingUpdate}
  template:
    metadata:
      annotations: {checksum: abc, kubectl.kubernetes.io/restartedAt: now}
    spec:
      containers:
      - name: exporter
        image: exporter:1
        terminationMessagePath: /dev/termination-log
      - name: nginx
        image: nginx:1.27
        args: [a, b]
        resources: {limits: {cpu: 100m}}
status: {replicas: 2}
`)
	g.Expect(driftedFields(obj(t, renderedDeployment), live)).To(BeEmpty(), "defaults, status and reordered named elements are no drift")

	spec := live["spec"].(map[string]any)
	spec["replicas"] = int64(5)
	containers := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
	nginx := containers[1].(map[string]any)
	nginx["image"] = "nginx:latest"
	nginx["args"] = []any{"a"}
	live["metadata"].(map[string]any)["labels"] = map[string]any{"extra": "yes"}
	g.Expect(driftedFields(obj(t, renderedDeployment), live)).To(Equal([]string{
		"metadata.labels.app",
		"spec.replicas",
		"spec.template.spec.containers[nginx].args",
		"spec.template.spec.containers[nginx].image",
	}))

	spec["template"].(map[string]any)["spec"].(map[string]any)["containers"] = containers[:1]
	g.Expect(driftedFields(obj(t, renderedDeployment), live)).To(ContainElement("spec.template.spec.containers[nginx]"))
}

// TestDriftedSecret: a Secret rendered with stringData matches the data
// the API server keeps.
func TestDriftedSecret(t *testing.T) {
	g := NewWithT(t)
	rendered := `{apiVersion: v1, kind: Secret, metadata: {name: s}, stringData: {password: hunter2}}`
	g.Expect(driftedFields(obj(t, rendered), obj(t, `{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {password: aHVudGVyMg==}}`))).To(BeEmpty())
	g.Expect(driftedFields(obj(t, rendered), obj(t, `{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {password: b3RoZXI=}}`))).To(Equal([]string{"data.password"}))
}

// TestRemoveFields: ignore paths select keys, named list elements, every
// element, and map keys with dots.
func TestRemoveFields(t *testing.T) {
	g := NewWithT(t)
	var paths []watchconfig.FieldPath
	for _, p := range []string{"spec.replicas", "spec.template.spec.containers[*].resources", "spec.template.metadata.annotations[checksum]", "spec.template.spec.containers[exporter]", "spec.absent.x"} {
		fp, err := watchconfig.ParseFieldPath(p)
		g.Expect(err).NotTo(HaveOccurred())
		paths = append(paths, fp)
	}
	o := obj(t, renderedDeployment)
	removeFields(o, paths)
	g.Expect(o["spec"]).To(Equal(obj(t, `
template:
  metadata:
    annotations: {}
  spec:
    containers:
    - name: nginx
      image: nginx:1.27
      args: [a, b]
`)))
}
