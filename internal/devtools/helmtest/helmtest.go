// Package helmtest holds the fakes the unit tests of the runtime's
// packages share (actionpath, helmconfig, release, watchconfig,
// helmruntime): a discovery server, a small chart, a custom resource, the
// library's dry-run option. Only tests import it.
package helmtest

import (
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// Server is a discovery client of a server with apps/v1; versions counts
// the version requests it answered: one per fetch of the capabilities.
func Server() (server *discoveryfake.FakeDiscovery, versions func() int) {
	fake := &discoveryfake.FakeDiscovery{
		Fake:               &clienttesting.Fake{},
		FakedServerVersion: &version.Info{GitVersion: "v1.35.4", Major: "1", Minor: "35"},
	}
	fake.Resources = []*metav1.APIResourceList{{
		GroupVersion: "apps/v1",
		APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true}},
	}}
	return fake, func() int {
		n := 0
		for _, a := range fake.Actions() {
			if a.GetResource().Resource == "version" {
				n++
			}
		}
		return n
	}
}

// Chart returns a small chart; edit changes it before it is returned.
func Chart(edit func(*chart.Chart)) *chart.Chart {
	c := &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"},
		Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte("greeting: {{ .Values.greeting }}")}},
		Values:    map[string]interface{}{"greeting": "hello", "replicas": 1},
		Schema:    []byte(`{"type":"object"}`),
	}
	if edit != nil {
		edit(c)
	}
	return c
}

// CR returns a custom resource of kind in group test.acme.com/v1.
func CR(kind, namespace, name string, spec map[string]any, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("test.acme.com/v1")
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

// Object returns an object of gvk with no spec.
func Object(gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// DryRun is the library's dry-run upgrade option.
func DryRun(u *action.Upgrade) error {
	u.DryRun, u.DryRunOption = true, "server"
	return nil
}
