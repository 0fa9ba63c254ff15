package helmconfig

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/kube"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/resource"
)

func configMapInfo(name string) *resource.Info {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": name, "namespace": "ns"},
	}}
	return &resource.Info{Name: name, Namespace: "ns", Object: u}
}

// TestBuildMemo: a kept build is answered with copies that neither the
// caller's edits of what it built nor of what it got back change; another
// manifest, or the same with another validate, is not answered; the
// build of a manifest kept already takes its place; the oldest build makes
// room.
func TestBuildMemo(t *testing.T) {
	g := NewWithT(t)
	var m buildMemo
	built := kube.ResourceList{configMapInfo("a")}
	m.put([]byte("kind: ConfigMap\n"), false, built)
	built[0].Object.(*unstructured.Unstructured).SetLabels(map[string]string{"edited": "after the build"})

	got, ok := m.get([]byte("kind: ConfigMap\n"), false)
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(HaveLen(1))
	g.Expect(got[0].Name).To(Equal("a"))
	g.Expect(got[0].Object.(*unstructured.Unstructured).GetLabels()).To(BeEmpty(), "the kept copy is not what Helm edits")
	got[0].Object.(*unstructured.Unstructured).SetLabels(map[string]string{"edited": "by the caller"})
	again, _ := m.get([]byte("kind: ConfigMap\n"), false)
	g.Expect(again[0].Object.(*unstructured.Unstructured).GetLabels()).To(BeEmpty(), "each answer is a copy of its own")

	_, ok = m.get([]byte("kind: ConfigMap\n"), true)
	g.Expect(ok).To(BeFalse(), "a build with validation is another build")
	_, ok = m.get([]byte("kind: Secret\n"), false)
	g.Expect(ok).To(BeFalse())

	m.put([]byte("kind: ConfigMap\n"), false, kube.ResourceList{configMapInfo("b")})
	got, _ = m.get([]byte("kind: ConfigMap\n"), false)
	g.Expect(got[0].Name).To(Equal("b"), "the same manifest kept again replaces its build")
	g.Expect(m.builds).To(HaveLen(1), "and takes no room of another's")

	for i := range maxBuilds {
		m.put([]byte(fmt.Sprintf("n: %d\n", i)), false, kube.ResourceList{configMapInfo(fmt.Sprint(i))})
	}
	_, ok = m.get([]byte("kind: ConfigMap\n"), false)
	g.Expect(ok).To(BeFalse(), "the oldest build made room")
	last, ok := m.get([]byte(fmt.Sprintf("n: %d\n", maxBuilds-1)), false)
	g.Expect(ok).To(BeTrue())
	g.Expect(last[0].Name).To(Equal(fmt.Sprint(maxBuilds - 1)))
}
