package helmruntime

import (
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	"sigs.k8s.io/yaml"
)

// Helm's ownership metadata: on install and upgrade Helm stamps every object
// with these, and it only adopts an existing object (say, a Secret kept by
// helm.sh/resource-policy: keep from an earlier release) that carries them.
// They are not part of the stored release manifest.
const (
	helmManagedByLabel        = "app.kubernetes.io/managed-by"
	helmManagedByValue        = "Helm"
	helmReleaseNameAnnotation = "meta.helm.sh/release-name"
	helmReleaseNSAnnotation   = "meta.helm.sh/release-namespace"
)

// Reconcile repairs drift from the release manifest, like the library, but
// stamps the objects with Helm's ownership metadata first. The library
// recreates a deleted object from the stored manifest alone, so the object
// would lack that metadata until the next upgrade; a kept object in that
// state blocks a later re-install of a release of the same name ("exists and
// cannot be imported into the current release").
func (c *namespacedActionClient) Reconcile(rel *release.Release) error {
	if rel == nil {
		return c.ActionInterface.Reconcile(rel)
	}
	ns := rel.Namespace
	if ns == "" {
		ns = c.namespace
	}
	manifest, err := WithOwnershipMetadata(rel.Manifest, rel.Name, ns)
	if err != nil {
		return fmt.Errorf("release %s: %w", rel.Name, err)
	}
	stamped := *rel
	stamped.Manifest = manifest
	return c.ActionInterface.Reconcile(&stamped)
}

// WithOwnershipMetadata returns manifest with Helm's ownership label and
// annotations for release name in namespace set on every object (the items
// of a List included).
func WithOwnershipMetadata(manifest, name, namespace string) (string, error) {
	seps := documentSeparator.FindAllStringIndex(manifest, -1)
	var b strings.Builder
	start := 0
	write := func(doc string) error {
		out, err := stampDocument(doc, name, namespace)
		if err != nil {
			return err
		}
		b.WriteString(out)
		return nil
	}
	for _, sep := range seps {
		if err := write(manifest[start:sep[0]]); err != nil {
			return "", err
		}
		b.WriteString(manifest[sep[0]:sep[1]])
		start = sep[1]
	}
	if err := write(manifest[start:]); err != nil {
		return "", err
	}
	return b.String(), nil
}

// stampDocument stamps one manifest document; empty documents and
// documents without a kind are returned unchanged.
func stampDocument(doc, name, namespace string) (string, error) {
	if strings.TrimSpace(doc) == "" {
		return doc, nil
	}
	var obj map[string]interface{}
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		return "", fmt.Errorf("parse manifest document: %w", err)
	}
	if obj == nil || obj["kind"] == nil {
		return doc, nil
	}
	stampObject(obj, name, namespace)
	out, err := yaml.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("write manifest document: %w", err)
	}
	return "\n" + string(out), nil
}

func stampObject(obj map[string]interface{}, name, namespace string) {
	if obj["kind"] == "List" {
		items, _ := obj["items"].([]interface{})
		for _, item := range items {
			if m, ok := item.(map[string]interface{}); ok {
				stampObject(m, name, namespace)
			}
		}
		return
	}
	meta, _ := obj["metadata"].(map[string]interface{})
	if meta == nil {
		meta = map[string]interface{}{}
		obj["metadata"] = meta
	}
	set := func(field, key, value string) {
		m, _ := meta[field].(map[string]interface{})
		if m == nil {
			m = map[string]interface{}{}
			meta[field] = m
		}
		m[key] = value
	}
	set("labels", helmManagedByLabel, helmManagedByValue)
	set("annotations", helmReleaseNameAnnotation, name)
	set("annotations", helmReleaseNSAnnotation, namespace)
}
