package cronscaler

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// helmReleaseOwners are the kinds whose custom resources own a Helm
// release of the operator's runtime (watches.yaml). The objects a release
// creates carry a controller ownerReference to that custom resource, and its
// status.deployedRelease.manifest holds the release's rendered manifest.
var helmReleaseOwners = map[schema.GroupKind]bool{
	{Group: "web.acme.com", Kind: "Nginx"}:               true,
	{Group: "web.acme.com", Kind: "WebApp"}:              true,
	{Group: "tenancy.acme.com", Kind: "NamespaceTenant"}: true,
}

// countField is the field of a target's object that holds the count a
// CronScaler writes: spec.minReplicas of an HPA, spec.replicas of anything
// scaled through /scale.
func countField(gk schema.GroupKind) []string {
	if isHPA(gk) {
		return []string{"spec", "minReplicas"}
	}
	return []string{"spec", "replicas"}
}

// manifestSetsField tells whether a Helm release's manifest (the rendered
// multi-document YAML) renders the object of kind gk named name in
// namespace with field set. An object rendered without a namespace is in
// the release's namespace, so it matches any.
func manifestSetsField(manifest string, gk schema.GroupKind, namespace, name string, field []string) (bool, error) {
	docs := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading the release manifest: %w", err)
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return false, fmt.Errorf("parsing the release manifest: %w", err)
		}
		if len(obj) == 0 {
			continue // a comment-only or empty document
		}
		u := unstructured.Unstructured{Object: obj}
		if u.GroupVersionKind().GroupKind() != gk || u.GetName() != name {
			continue
		}
		if ns := u.GetNamespace(); ns != "" && ns != namespace {
			continue
		}
		v, found, err := unstructured.NestedFieldNoCopy(obj, field...)
		return err == nil && found && v != nil, nil
	}
}
