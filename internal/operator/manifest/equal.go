package manifest

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// SameObjects reports whether two release manifests describe the same
// objects, field for field, whatever their formatting: comments, key
// order and document order do not count, and neither do owner references
// to owner (the custom resource) that only rendered carries.
//
// This operator's library stamps those owner references into the
// manifest it renders and writes it back sorted, while operator-sdk's Helm
// operator sets them on the objects only and keeps Helm's text. A release
// that operator-sdk installed from the same chart and values is therefore
// the same release, not one to upgrade.
//
// A deployed object with an owner reference to owner is among no rendered
// object, which lose theirs: then the rendered manifest is not parsed.
// That is every changed manifest of a release this operator installed.
func SameObjects(rendered, deployed, owner string) (bool, error) {
	b, err := objectsOf(deployed, "")
	if err != nil {
		return false, fmt.Errorf("deployed manifest: %w", err)
	}
	if owner != "" && slices.ContainsFunc(b, func(o map[string]interface{}) bool { return ownedBy(o, owner) }) {
		return false, nil
	}
	a, err := objectsOf(rendered, owner)
	if err != nil {
		return false, fmt.Errorf("rendered manifest: %w", err)
	}
	return reflect.DeepEqual(a, b), nil
}

// ownedBy reports whether obj has an owner reference to the object whose
// UID is owner (the references dropOwnerReferences drops).
func ownedBy(obj map[string]interface{}, owner string) bool {
	meta, _ := obj["metadata"].(map[string]interface{})
	refs, _ := meta["ownerReferences"].([]interface{})
	return slices.ContainsFunc(refs, func(r interface{}) bool {
		m, ok := r.(map[string]interface{})
		return ok && m["uid"] == owner
	})
}

// objectsOf parses manifest into its objects, sorted by kind, namespace
// and name, without the owner references to owner.
func objectsOf(manifest, owner string) ([]map[string]interface{}, error) {
	var objs []map[string]interface{}
	_, err := mapDocuments(manifest, func(doc string) (string, error) {
		if strings.TrimSpace(doc) == "" {
			return doc, nil
		}
		var obj map[string]interface{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return "", err
		}
		if obj == nil {
			return doc, nil
		}
		if owner != "" {
			dropOwnerReferences(obj, owner)
		}
		objs = append(objs, obj)
		return doc, nil
	})
	if err != nil {
		return nil, err
	}
	id := func(o map[string]interface{}) string {
		meta, _ := o["metadata"].(map[string]interface{})
		return fmt.Sprint(o["apiVersion"], "/", o["kind"], "/", meta["namespace"], "/", meta["name"])
	}
	slices.SortStableFunc(objs, func(a, b map[string]interface{}) int { return cmp.Compare(id(a), id(b)) })
	return objs, nil
}

// dropOwnerReferences removes obj's owner references to the object whose
// UID is owner (and the list, when nothing else remains).
func dropOwnerReferences(obj map[string]interface{}, owner string) {
	meta, _ := obj["metadata"].(map[string]interface{})
	refs, _ := meta["ownerReferences"].([]interface{})
	if refs == nil {
		return
	}
	kept := refs[:0:0]
	for _, r := range refs {
		if m, ok := r.(map[string]interface{}); ok && m["uid"] == owner {
			continue
		}
		kept = append(kept, r)
	}
	if len(kept) == 0 {
		delete(meta, "ownerReferences")
		return
	}
	meta["ownerReferences"] = kept
}
