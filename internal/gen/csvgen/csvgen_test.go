package csvgen

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

func TestHumanize(t *testing.T) {
	cases := []struct {
		in   string // a field or kind name
		want string // its display name
	}{
		{"replicaCount", "Replica Count"},                                       // lower camel case
		{"NamespaceTenant", "Namespace Tenant"},                                 // a kind
		{"webAppHostname", "Web App Hostname"},                                  // several words
		{"apiVersion", "API Version"},                                           // acronyms in capitals
		{"targetCPUUtilizationPercentage", "Target CPU Utilization Percentage"}, // a run of capitals
		{"tls", "TLS"}, // a lone acronym
	}
	for _, tc := range cases {
		NewWithT(t).Expect(humanize(tc.in)).To(Equal(tc.want), tc.in)
	}
}

func TestOwnedDescriptors(t *testing.T) {
	g := NewWithT(t)
	str := apiextensionsv1.JSONSchemaProps{Type: "string", Description: "A name. More detail."}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = "things.test.acme.com"
	crd.Spec.Names.Kind = "Thing"
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{
		Name: "v1", Storage: true,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Description: "Thing is a test kind. It has fields.",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"name":    str,
					"enabled": {Type: "boolean"},
					"count":   {Type: "integer"},
					"tier":    {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"dev"`)}, {Raw: []byte(`"prod"`)}}},
					"image":   {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"tag": str}},
					"labels":  {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &str}},
				}},
				"status": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
			},
		}},
	}}
	o, err := Owned(crd, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.DisplayName).To(Equal("Thing"))
	g.Expect(o.Description).To(Equal("Thing is a test kind."))
	byPath := map[string]Descriptor{}
	for _, d := range o.SpecDescriptors {
		byPath[d.Path] = d
	}
	// Each leaf, and each top-level group (image) for the console and the
	// scorecard's olm-spec-descriptors test.
	g.Expect(byPath).To(HaveLen(7))
	g.Expect(byPath).To(HaveKey("image"))
	g.Expect(byPath["name"].XDescriptors).To(ConsistOf(xText))
	g.Expect(byPath["name"].Description).To(Equal("A name."))
	g.Expect(byPath["enabled"].XDescriptors).To(ConsistOf(xBool))
	g.Expect(byPath["count"].XDescriptors).To(ConsistOf(xNumber))
	g.Expect(byPath["tier"].XDescriptors).To(ConsistOf(xSelect+"dev", xSelect+"prod"))
	g.Expect(byPath["image.tag"].XDescriptors).To(ConsistOf(xFieldGroup+"image", xText))
	g.Expect(byPath["labels"].XDescriptors).To(ConsistOf(xAdvanced))
	// An open status (the Helm runtime's): conditions, Ready among them,
	// the generation they describe and the chart version the release runs.
	g.Expect(o.StatusDescriptors).To(HaveLen(3))
	g.Expect(o.StatusDescriptors[0].XDescriptors).To(ConsistOf(xConditions))
	g.Expect(o.StatusDescriptors[0].Description).To(ContainSubstring("Ready"))
	g.Expect(o.StatusDescriptors[1].Path).To(Equal("observedGeneration"))
	g.Expect(o.StatusDescriptors[2].Path).To(Equal("chartVersion"))
}

// TestCSVBaseUpToDate fails when the committed CSV base's owned-CRD section
// no longer matches the CRDs, charts and samples.
func TestCSVBaseUpToDate(t *testing.T) {
	_, changed, err := Generate(DefaultPaths("../../.."))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	if changed {
		t.Fatal("config/manifests/bases/platform-operator.clusterserviceversion.yaml is stale: run make manifests")
	}
}

// Every served version has its owned entry, with descriptors on its own
// field names: WebApp v1beta1 names webAppHostname hostname.
func TestOwnedVersions(t *testing.T) {
	g := NewWithT(t)
	crds, err := LoadCRDs(filepath.Join("..", "..", "..", "config", "crd", "bases"))
	g.Expect(err).NotTo(HaveOccurred())
	var webapps *apiextensionsv1.CustomResourceDefinition
	for _, c := range crds {
		if c.Name == "webapps.web.acme.com" {
			webapps = c
		}
	}
	g.Expect(webapps).NotTo(BeNil())
	owned, err := OwnedVersions(webapps, []Resource{{Kind: "Deployment", Name: "", Version: "v1"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(owned).To(HaveLen(2))
	paths := func(o OwnedCRD) []string {
		var p []string
		for _, d := range o.SpecDescriptors {
			p = append(p, d.Path)
		}
		return p
	}
	g.Expect(owned[0].Version).To(Equal("v1alpha1"), "the storage version first")
	g.Expect(paths(owned[0])).To(ContainElement("webAppHostname"))
	g.Expect(owned[1].Version).To(Equal("v1beta1"))
	g.Expect(owned[1].Kind).To(Equal("WebApp"))
	g.Expect(owned[1].Resources).To(Equal(owned[0].Resources))
	g.Expect(paths(owned[1])).To(ContainElement("hostname"))
	g.Expect(paths(owned[1])).NotTo(ContainElement("webAppHostname"))
}
