package shipping

import (
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/acme/platform-operator/internal/operator/apikinds"
)

// TestConversionWebhookReachesTheSidecar: in what `make deploy` installs
// (config/default), each CRD with a second version calls, for conversion,
// the Service in front of the sidecar's webhook server, on the port the
// sidecar serves it on, at the path it serves conversions on.
func TestConversionWebhookReachesTheSidecar(t *testing.T) {
	g := NewWithT(t)
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", "default"))
	g.Expect(err).NotTo(HaveOccurred())
	crds := map[string]*apiextensionsv1.CustomResourceDefinition{}
	services := map[string]*corev1.Service{}
	var dep *appsv1.Deployment
	for _, r := range resources.Resources() {
		data, err := r.AsYAML()
		g.Expect(err).NotTo(HaveOccurred())
		switch r.GetKind() {
		case "CustomResourceDefinition":
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(yaml.Unmarshal(data, crd)).To(Succeed())
			crds[crd.Name] = crd
		case "Service":
			svc := &corev1.Service{}
			g.Expect(yaml.Unmarshal(data, svc)).To(Succeed())
			services[svc.Namespace+"/"+svc.Name] = svc
		case "Deployment":
			dep = &appsv1.Deployment{}
			g.Expect(yaml.Unmarshal(data, dep)).To(Succeed())
		}
	}
	g.Expect(dep).NotTo(BeNil())
	var sidecar *corev1.Container
	for i, c := range dep.Spec.Template.Spec.Containers {
		if c.Name == "extensions" {
			sidecar = &dep.Spec.Template.Spec.Containers[i]
		}
	}
	g.Expect(sidecar).NotTo(BeNil())

	kinds, err := apikinds.LoadKinds(filepath.Join(root, "config", "crd", "kinds.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	converted := apikinds.ConvertedCRDs(kinds)
	g.Expect(converted).To(ContainElement("webapps.web.acme.com"))
	for _, name := range converted {
		crd := crds[name]
		g.Expect(crd).NotTo(BeNil(), name)
		g.Expect(crd.Spec.Conversion.Strategy).To(Equal(apiextensionsv1.WebhookConverter), name)
		ref := crd.Spec.Conversion.Webhook.ClientConfig.Service
		g.Expect(ref).NotTo(BeNil(), name)
		g.Expect(*ref.Path).To(Equal("/convert"))
		svc := services[ref.Namespace+"/"+ref.Name]
		g.Expect(svc).NotTo(BeNil(), "%s calls Service %s/%s, which config/default does not install", name, ref.Namespace, ref.Name)
		g.Expect(svc.Namespace).To(Equal(dep.Namespace))
		port := int32(443)
		if ref.Port != nil {
			port = *ref.Port
		}
		i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port })
		g.Expect(i).To(BeNumerically(">=", 0), "Service %s has no port %d", svc.Name, port)
		target := svc.Spec.Ports[i].TargetPort.String()
		j := slices.IndexFunc(sidecar.Ports, func(p corev1.ContainerPort) bool { return p.Name == target })
		g.Expect(j).To(BeNumerically(">=", 0), "the sidecar has no port %s", target)
		g.Expect(sidecar.Args).To(ContainElement("--admission-port="+strconv.Itoa(int(sidecar.Ports[j].ContainerPort))),
			"the sidecar serves its webhooks on the port the Service targets")
		for k, v := range svc.Spec.Selector {
			g.Expect(dep.Spec.Template.Labels).To(HaveKeyWithValue(k, v))
		}
	}
	g.Expect(sidecar.Args).To(ContainElement(ContainSubstring("--admission-certs=self")),
		"with self-issued certificates the sidecar injects its CA into these CRDs")
}
