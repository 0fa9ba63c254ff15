package helmruntime

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/manifest"
)

// The library copies the whole rendered manifest of the deployed release
// into status.deployedRelease.manifest of the custom resource. Secrets a
// chart renders would then be readable by everyone who may read the custom
// resource (the built-in "view" role may, and may not read Secrets). The
// reconciler therefore gets a client whose status writes redact them; the
// manifest Helm stores in its release Secret, and uses for drift repair, is
// untouched.

// redactingClient is a client.Client whose status writes redact Secret
// values in status.deployedRelease.manifest of unstructured objects.
type redactingClient struct {
	client.Client
}

// NewRedactingClient wraps c so that Status().Update and Status().Patch of
// an unstructured object replace, in its status.deployedRelease.manifest,
// every data and stringData value of kind: Secret documents with
// [manifest.RedactedValue]. Everything else goes to c unchanged.
func NewRedactingClient(c client.Client) client.Client {
	return &redactingClient{Client: c}
}

// Status returns a status writer that redacts before writing.
func (c *redactingClient) Status() client.SubResourceWriter {
	return &redactingStatusWriter{SubResourceWriter: c.Client.Status()}
}

type redactingStatusWriter struct {
	client.SubResourceWriter
}

func (w *redactingStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	redactStatus(obj)
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w *redactingStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	redactStatus(obj)
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
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
