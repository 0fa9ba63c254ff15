package helmruntime

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The library writes a custom resource's status with one call,
// Status().Update of the reconciler's client. The runtime changes what is
// written through that client, in this order:
//
//  1. the generation the status describes and Ready (readycontroller.Tracker.StampStatus);
//  2. a refusal of the ownership layer keeps its own reason on the
//     conditions that report it (refusals.go);
//  3. Secret values are redacted from the release manifest the status
//     shows (redact.go).

// statusEdit changes obj before its status is written; written, when not
// nil, runs once the write succeeded.
type statusEdit func(ctx context.Context, obj client.Object) (written func())

// editedStatusClient is the reconciler's client: c, whose status writes
// pass edits in order.
type editedStatusClient struct {
	client.Client
	edits []statusEdit
}

func withStatusEdits(c client.Client, edits ...statusEdit) client.Client {
	return &editedStatusClient{Client: c, edits: edits}
}

func (c *editedStatusClient) Status() client.SubResourceWriter {
	return &editedStatusWriter{SubResourceWriter: c.Client.Status(), edits: c.edits}
}

type editedStatusWriter struct {
	client.SubResourceWriter
	edits []statusEdit
}

// Update edits obj's status, writes it, and runs what the edits asked to
// run after a write.
func (w *editedStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	var written []func()
	for _, edit := range w.edits {
		if f := edit(ctx, obj); f != nil {
			written = append(written, f)
		}
	}
	if err := w.SubResourceWriter.Update(ctx, obj, opts...); err != nil {
		return err
	}
	for _, f := range written {
		f()
	}
	return nil
}

// Patch redacts obj's status and patches it. The library never patches
// status, and Ready and the refusal reasons edit whole statuses; the
// redaction holds for every write.
func (w *editedStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	redactStatus(obj)
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}
