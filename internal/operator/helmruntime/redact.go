package helmruntime

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/manifest"
)

// The library copies the whole rendered manifest of the deployed release
// into status.deployedRelease.manifest of the custom resource. Secrets a
// chart renders would then be readable by everyone who may read the custom
// resource (the built-in "view" role may, and may not read Secrets). The
// reconciler's status writes therefore redact them; the manifest Helm
// stores in its release Secret, and uses for drift repair, is untouched.

// redactSecrets is the status edit that replaces, in
// status.deployedRelease.manifest, every data and stringData value of kind:
// Secret documents with [manifest.RedactedValue] (statusclient.go).
func redactSecrets(_ context.Context, obj client.Object) func() {
	redactStatus(obj)
	return nil
}

// redactStatus redacts status.deployedRelease.manifest of obj in place when
// obj is unstructured and has one.
func redactStatus(obj client.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	m, found, err := unstructured.NestedString(u.Object, "status", "deployedRelease", "manifest")
	if err != nil || !found {
		return
	}
	_ = unstructured.SetNestedField(u.Object, manifest.RedactManifest(m), "status", "deployedRelease", "manifest")
}
