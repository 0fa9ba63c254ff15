package actionpath

import (
	"context"
	"fmt"

	"helm.sh/helm/v3/pkg/release"

	"github.com/acme/platform-operator/internal/operator/manifest"
)

// stampOwnershipOnRepair is the layer that stamps Helm's ownership
// metadata on the objects drift repair recreates (see Reconcile below).
func stampOwnershipOnRepair(_ context.Context, t target, below actionClient) actionClient {
	return &repairStamper{actionClient: below, namespace: t.namespace}
}

// repairStamper is an action client whose drift repair stamps Helm's
// ownership metadata for a release in namespace.
type repairStamper struct {
	actionClient
	namespace string
}

// Reconcile repairs drift from the release manifest, like the library, but
// stamps the objects with Helm's ownership metadata first. The library
// recreates a deleted object from the stored manifest alone, so the object
// would lack that metadata until the next upgrade; a kept object in that
// state blocks a later re-install of a release of the same name ("exists and
// cannot be imported into the current release").
func (c *repairStamper) Reconcile(rel *release.Release) error {
	if rel == nil {
		return c.actionClient.Reconcile(rel)
	}
	ns := rel.Namespace
	if ns == "" {
		ns = c.namespace
	}
	stampedManifest, err := manifest.WithOwnershipMetadata(rel.Manifest, rel.Name, ns)
	if err != nil {
		return fmt.Errorf("release %s: %w", rel.Name, err)
	}
	stamped := *rel
	stamped.Manifest = stampedManifest
	return c.actionClient.Reconcile(&stamped)
}
