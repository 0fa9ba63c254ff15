package helmconfig

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/kube"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/resource"
	"sigs.k8s.io/yaml"
)

// staticBuilder is a kube client whose Build parses a manifest with a
// fixed REST mapper, as Helm's does with the server's.
type staticBuilder struct {
	kube.Interface
	rm meta.RESTMapper
}

func (b staticBuilder) Build(r io.Reader, _ bool) (kube.ResourceList, error) {
	in, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var list kube.ResourceList
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(in)))
	for {
		doc, err := docs.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, err
		}
		if u.Object == nil {
			continue
		}
		gvk := u.GroupVersionKind()
		m, err := b.rm.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, err
		}
		list = append(list, &resource.Info{Name: u.GetName(), Namespace: u.GetNamespace(), Object: u, Mapping: m})
	}
	return list, nil
}

const ownersManifest = `---
# Source: web/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: same-namespace
  namespace: team-a
data:
  port: "8080"
  ratio: "0.5"
  enabled: "yes"
  script: |
    #!/bin/sh
    echo "hello: world"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: other-namespace
  namespace: team-b
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: cluster-wide
rules:
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list"]
---
apiVersion: v1
kind: Secret
metadata:
  name: kept
  namespace: team-a
  annotations:
    helm.sh/resource-policy: keep
stringData:
  password: s3cret
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: team-a
  labels: {a10: "1", a9: "2", app.kubernetes.io/name: web}
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: same-namespace
    uid: 0b9e3c1a-2f4d-4e5b-8c6a-000000000001
spec:
  replicas: 2
  progressDeadlineSeconds: 600.0
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.27
        args: ["--ratio", "1e3", "--on", "null"]
        resources:
          limits: {cpu: 1.5, memory: 128Mi}
`

// ownersMapper maps the kinds of ownersManifest and of the owners the
// tests use.
func ownersMapper() *meta.DefaultRESTMapper {
	rm := meta.NewDefaultRESTMapper(nil)
	for _, k := range []struct {
		gvk   schema.GroupVersionKind
		scope meta.RESTScope
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Group: "web.acme.com", Version: "v1alpha1", Kind: "Nginx"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "tenancy.acme.com", Version: "v1alpha1", Kind: "NamespaceTenant"}, meta.RESTScopeRoot},
	} {
		rm.Add(k.gvk, k.scope)
	}
	return rm
}

// TestOwnerRendererWritesWhatTheLibraryWrites: for a namespaced owner and
// a cluster-scoped one, over objects in the owner's namespace, in
// another, cluster-scoped, kept, and already owned, ownerRenderer's
// output is the library's owner post-renderer's, byte for byte.
func TestOwnerRendererWritesWhatTheLibraryWrites(t *testing.T) {
	g := NewWithT(t)
	rm := ownersMapper()
	builder := staticBuilder{rm: rm}

	namespaced := &unstructured.Unstructured{}
	namespaced.SetGroupVersionKind(schema.GroupVersionKind{Group: "web.acme.com", Version: "v1alpha1", Kind: "Nginx"})
	namespaced.SetNamespace("team-a")
	namespaced.SetName("web")
	namespaced.SetUID("5f0c2a8e-7d1b-4c3e-9a7f-000000000002")
	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(schema.GroupVersionKind{Group: "tenancy.acme.com", Version: "v1alpha1", Kind: "NamespaceTenant"})
	cluster.SetName("team-a")
	cluster.SetUID("5f0c2a8e-7d1b-4c3e-9a7f-000000000003")

	for _, owner := range []*unstructured.Unstructured{namespaced, cluster} {
		want, err := libraryOwnerRenderer(rm, builder, owner).Run(bytes.NewBufferString(ownersManifest))
		g.Expect(err).NotTo(HaveOccurred())
		got, err := newOwnerRenderer(rm, builder, owner).Run(bytes.NewBufferString(ownersManifest))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.String()).To(Equal(want.String()), "owner %s", owner.GetKind())
		g.Expect(got.String()).To(ContainSubstring("uid: " + string(owner.GetUID())))
	}
	g.Expect(must(newOwnerRenderer(rm, builder, namespaced).Run(bytes.NewBufferString(ownersManifest)))).To(
		ContainSubstring("operator-sdk/primary-resource: team-a/web"), "objects a namespaced owner cannot own carry the owner annotations")

	// An unknown kind fails as the library's does.
	unknown := "apiVersion: x.acme.com/v1\nkind: Unknown\nmetadata:\n  name: u\n"
	_, wantErr := libraryOwnerRenderer(rm, builder, namespaced).Run(bytes.NewBufferString(unknown))
	_, err := newOwnerRenderer(rm, builder, namespaced).Run(bytes.NewBufferString(unknown))
	g.Expect(wantErr).To(HaveOccurred())
	g.Expect(err).To(MatchError(wantErr.Error()))
}

func must(b *bytes.Buffer, err error) string {
	if err != nil {
		panic(err)
	}
	return b.String()
}

// keepingBuilder is a staticBuilder that keeps the builds it is told of.
type keepingBuilder struct {
	staticBuilder
	memo buildMemo
}

func (b *keepingBuilder) keepBuild(manifest []byte, validate bool, list kube.ResourceList) {
	b.memo.put(manifest, validate, list)
}

// TestOwnerRendererKeepsTheBuildOfItsOutput: what ownerRenderer hands its
// kube client as the build of its output is what a build of that output
// parses to, object by object, for owners that own and that annotate.
func TestOwnerRendererKeepsTheBuildOfItsOutput(t *testing.T) {
	g := NewWithT(t)
	rm := ownersMapper()
	owner := &unstructured.Unstructured{}
	owner.SetGroupVersionKind(schema.GroupVersionKind{Group: "web.acme.com", Version: "v1alpha1", Kind: "Nginx"})
	owner.SetNamespace("team-a")
	owner.SetName("web")
	owner.SetUID("5f0c2a8e-7d1b-4c3e-9a7f-000000000002")

	kc := &keepingBuilder{staticBuilder: staticBuilder{rm: rm}}
	out, err := newOwnerRenderer(rm, kc, owner).Run(bytes.NewBufferString(ownersManifest))
	g.Expect(err).NotTo(HaveOccurred())
	kept, ok := kc.memo.get(out.Bytes(), false)
	g.Expect(ok).To(BeTrue(), "the output's build is kept")
	parsed, err := kc.Build(bytes.NewReader(out.Bytes()), false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kept).To(HaveLen(len(parsed)))
	for i := range parsed {
		g.Expect(kept[i].Name).To(Equal(parsed[i].Name))
		g.Expect(kept[i].Namespace).To(Equal(parsed[i].Namespace))
		g.Expect(kept[i].Mapping).To(Equal(parsed[i].Mapping))
		g.Expect(kept[i].Object).To(Equal(parsed[i].Object), "object %d", i)
	}
}
