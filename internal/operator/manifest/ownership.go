package manifest

import (
	"fmt"
	"strings"

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

// WithOwnershipMetadata returns manifest with Helm's ownership label and
// annotations for release name in namespace set on every object (the items
// of a List included).
func WithOwnershipMetadata(manifest, name, namespace string) (string, error) {
	return mapDocuments(manifest, func(doc string) (string, error) { return stampDocument(doc, name, namespace) })
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
