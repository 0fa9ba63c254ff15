package uninstall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/releaseidentity"
)

var (
	// ErrResourcesExist is returned when resources exist and deleting them
	// was not asked for.
	ErrResourcesExist = errors.New("custom resources of the operator's kinds exist")
	// ErrResourcesRemain is returned when deleted resources are still
	// there at the timeout.
	ErrResourcesRemain = errors.New("custom resources of the operator's kinds are still there")
)

// Uninstaller finds, and on request deletes, the custom resources of the
// operator's kinds, then prepares their CRDs for the operator's removal.
type Uninstaller struct {
	// CRDs reads and patches CustomResourceDefinitions.
	CRDs client.Client
	// Objects reads and deletes the custom resources, as metadata only, in
	// their storage version.
	Objects metadata.Interface
	// Out receives the messages for the person running the command.
	Out   io.Writer
	Clock clock.Clock
	// Kinds are the operator's kinds (LoadKinds).
	Kinds []schema.GroupKind
	// Delete deletes the resources found and waits until they are gone;
	// otherwise their existence is refused.
	Delete bool
	// Timeout bounds the wait for deleted resources to be gone.
	Timeout time.Duration
	// Interval is how often the resources are listed while waiting.
	Interval time.Duration
	// Selector, a label selector, limits the run to the resources it
	// matches; the CRDs' conversion is then left as it is.
	Selector string
	// DeleteCommand is the command line that deletes them, for the
	// refusal message.
	DeleteCommand string
}

// Run returns nil once no resource of the operator's kinds (matching
// Selector) is left and the CRDs that have a conversion webhook no longer
// need the operator to be read; ErrResourcesExist or ErrResourcesRemain
// when some are left, after it wrote each of them to Out.
func (u *Uninstaller) Run(ctx context.Context) error {
	crds, err := u.ownedCRDs(ctx)
	if err != nil {
		return err
	}
	if len(crds) == 0 {
		fmt.Fprintln(u.Out, "No CRD of the operator's kinds is installed.")
		return nil
	}
	left, err := u.find(ctx, crds)
	if err != nil {
		return err
	}
	if len(left) > 0 && !u.Delete {
		WriteRefusal(u.Out, u.Clock.Now(), left, u.DeleteCommand, u.Selector)
		return ErrResourcesExist
	}
	if len(left) > 0 {
		if err := u.deleteAndWait(ctx, crds, left); err != nil {
			return err
		}
	}
	fmt.Fprintf(u.Out, "No resource of the operator's kinds (%s) is left%s.\n", kindList(crds), u.scope())
	if err := u.prepareConversion(ctx, crds); err != nil {
		return err
	}
	if u.Selector != "" {
		return nil
	}
	return u.removeIdentities(ctx)
}

// identities are the kinds of what the operator creates in each release's
// namespace to apply releases as (releaseidentity.Managed).
var identities = []schema.GroupVersionResource{
	{Version: "v1", Resource: "serviceaccounts"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
}

// removeIdentities deletes the ServiceAccounts and RoleBindings the
// operator created for its releases (labelled
// releaseidentity.ManagedByLabel), which no release needs once none is
// left: nothing of the operator stays in its tenants' namespaces.
func (u *Uninstaller) removeIdentities(ctx context.Context) error {
	selector := releaseidentity.ManagedByLabel + "=" + releaseidentity.ManagedByValue
	removed := 0
	for _, gvr := range identities {
		items, err := u.list(ctx, gvr, selector, 0)
		if err != nil {
			return err
		}
		for _, item := range items {
			err := u.Objects.Resource(gvr).Namespace(item.Namespace).Delete(ctx, item.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete %s %s/%s: %w", gvr.Resource, item.Namespace, item.Name, err)
			}
			removed++
		}
	}
	if removed > 0 {
		fmt.Fprintf(u.Out, "Removed the %d ServiceAccounts and RoleBindings the operator made for its releases (%s).\n", removed, selector)
	}
	return nil
}

// ownedCRDs returns the installed CRDs of the operator's kinds.
func (u *Uninstaller) ownedCRDs(ctx context.Context) ([]apiextensionsv1.CustomResourceDefinition, error) {
	var list apiextensionsv1.CustomResourceDefinitionList
	if err := u.CRDs.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list CRDs: %w", err)
	}
	return SelectCRDs(list.Items, u.Kinds), nil
}

// find lists the resources of every CRD, across all namespaces, in the
// storage version.
func (u *Uninstaller) find(ctx context.Context, crds []apiextensionsv1.CustomResourceDefinition) ([]Resource, error) {
	var found []Resource
	for i := range crds {
		crd := &crds[i]
		gvr, err := resourceOf(crd)
		if err != nil {
			return nil, err
		}
		items, err := u.list(ctx, gvr, u.Selector, 0)
		if err != nil {
			return nil, err
		}
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		for _, m := range items {
			r := Resource{Kind: gk, Resource: gvr, Namespace: m.Namespace, Name: m.Name, Finalizers: m.Finalizers}
			if m.DeletionTimestamp != nil {
				r.Deleting = m.DeletionTimestamp.Time
			}
			found = append(found, r)
		}
	}
	return found, nil
}

// list returns the metadata of gvr's objects matching selector; limit > 0
// stops after that many.
func (u *Uninstaller) list(ctx context.Context, gvr schema.GroupVersionResource, selector string, limit int64) ([]metav1.PartialObjectMetadata, error) {
	var items []metav1.PartialObjectMetadata
	opts := metav1.ListOptions{LabelSelector: selector, Limit: 500}
	if limit > 0 {
		opts.Limit = limit
	}
	for {
		page, err := u.Objects.Resource(gvr).List(ctx, opts)
		if apierrors.IsNotFound(err) {
			// The CRD was deleted meanwhile, and its objects with it.
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", gvr, err)
		}
		items = append(items, page.Items...)
		if page.Continue == "" || (limit > 0 && int64(len(items)) >= limit) {
			return items, nil
		}
		opts.Continue = page.Continue
	}
}

// deleteAndWait deletes left and waits until no resource of the CRDs
// (matching Selector) is there, up to Timeout.
func (u *Uninstaller) deleteAndWait(ctx context.Context, crds []apiextensionsv1.CustomResourceDefinition, left []Resource) error {
	fmt.Fprintf(u.Out, "Deleting %s of the operator's kinds%s, and waiting up to %s for their finalizers:\n", count(len(left)), u.scope(), u.Timeout)
	background := metav1.DeletePropagationBackground
	for _, r := range left {
		fmt.Fprintln(u.Out, "  "+r.String())
		if !r.Deleting.IsZero() {
			continue
		}
		err := u.Objects.Resource(r.Resource).Namespace(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{PropagationPolicy: &background})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", r, err)
		}
	}
	deadline := u.Clock.Now().Add(u.Timeout)
	reported := len(left)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-u.Clock.After(u.Interval):
		}
		var err error
		left, err = u.find(ctx, crds)
		if err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		now := u.Clock.Now()
		if !now.Before(deadline) {
			WriteTimeout(u.Out, now, u.Timeout, left)
			return ErrResourcesRemain
		}
		if len(left) != reported {
			reported = len(left)
			fmt.Fprintf(u.Out, "%s left: %s\n", count(len(left)), resourceList(left))
		}
	}
}

// prepareConversion leaves every CRD that has a conversion webhook
// readable without the operator where that is safe (DecideConversion),
// and says what it did to each.
func (u *Uninstaller) prepareConversion(ctx context.Context, crds []apiextensionsv1.CustomResourceDefinition) error {
	for i := range crds {
		crd := &crds[i]
		if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
			continue
		}
		stored := 0
		if u.Selector == "" {
			gvr, err := resourceOf(crd)
			if err != nil {
				return err
			}
			// Every object of the kind counts here, whatever the selector.
			items, err := u.list(ctx, gvr, "", 1)
			if err != nil {
				return err
			}
			stored = len(items)
		}
		d := DecideConversion(crd, stored, u.Selector != "")
		if d.Reset {
			if err := resetConversion(ctx, u.CRDs, crd); err != nil {
				return err
			}
		}
		fmt.Fprintln(u.Out, d.Why)
	}
	return nil
}

// FieldManager owns the conversion strategy this command sets. A later
// server-side apply of the shipped CRD (make deploy, make install) names it
// in its conflict, and takes the field back with --force-conflicts.
const FieldManager = "platform-operator-uninstall"

// resetConversion sets the CRD's conversion strategy to None, provided it
// is unchanged since it was read.
func resetConversion(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	base := crd.DeepCopy()
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := c.Patch(ctx, crd, patch, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("set the conversion of CRD %s to None: %w", crd.Name, err)
	}
	return nil
}

// scope says what the run was limited to, if anything.
func (u *Uninstaller) scope() string {
	if u.Selector == "" {
		return ""
	}
	return " matching " + u.Selector
}

func kindList(crds []apiextensionsv1.CustomResourceDefinition) string {
	names := make([]string, len(crds))
	for i, crd := range crds {
		names[i] = crd.Spec.Names.Kind
	}
	return strings.Join(names, ", ")
}

func resourceList(rs []Resource) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.String()
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
