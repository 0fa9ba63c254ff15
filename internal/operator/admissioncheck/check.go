// Package admissioncheck is the admission render check of the sidecar's
// webhook: before a custom resource is stored, it answers what the runtime
// would answer once it reconciles it. It applies the runtime's own rules
// (package release) and reads only; it does not import the runtime.
package admissioncheck

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acme/platform-operator/internal/operator/claims"
	"github.com/acme/platform-operator/internal/operator/helmconfig"
	"github.com/acme/platform-operator/internal/operator/manifest"
	"github.com/acme/platform-operator/internal/operator/release"
	"github.com/acme/platform-operator/internal/operator/rollout"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
	"github.com/acme/platform-operator/internal/operator/workloadrefs"
)

// Checker answers, before a custom resource is stored, what the runtime
// would answer once it reconciles it: whether the resource's release
// belongs to another resource, whether its chart renders with its spec
// into a release whose record fits a Secret, and whether an object it
// renders belongs to another release or to none
// (package claims). It also refuses an Ingress host that another tenant
// serves (claims.HostScope), which the runtime would not. The validating admission webhook of the sidecar asks it, so that
// `kubectl apply` fails at once instead of a status condition later; the
// runtime's own checks (the ownership layer, the render on install) stay
// the defence for what the webhook did not see.
//
// It reads only: release records and other custom resources through an
// uncached reader, the objects a chart looks up through Helm's read-only
// lookup client.
type Checker struct {
	kinds    map[schema.GroupKind]*checkedKind
	reader   client.Reader
	cfg      *rest.Config
	discover discovery.CachedDiscoveryInterface
	caps     *helmconfig.Capabilities
	renders  *renderCache
	mapper   meta.RESTMapper
	claims   claims.Checker
}

// checkedKind is one watches.yaml entry as the check sees it.
type checkedKind struct {
	watch         watchconfig.ResolvedWatch
	selector      labels.Selector
	clusterScoped bool
	// releaseNamespace stores the releases of a cluster-scoped kind.
	releaseNamespace string
	// def is the kind's default chart version; pinned are the other
	// versions it ships, by version, which a resource may pin
	// (rollout.PinAnnotation).
	def    *checkedChart
	pinned map[string]*checkedChart
}

// checkedChart is one shipped chart version of a kind, as a render uses it.
type checkedChart struct {
	chart *chart.Chart
	// name is how answers name the chart: its path, and its version when
	// it is not the kind's default.
	name   string
	digest release.ChartDigest
	values release.Values
}

// newCheckedChart prepares chrt for the renders of rw's resources: the
// values the reconciler computes for rw, with chrt's defaults and
// generated values.
func newCheckedChart(rw watchconfig.ResolvedWatch, chrt *chart.Chart, name string) (*checkedChart, error) {
	rw.Chart = chrt
	vals, err := rw.Values()
	if err != nil {
		return nil, err
	}
	return &checkedChart{chart: chrt, name: name, digest: release.DigestChart(chrt), values: vals}, nil
}

// chartOf returns the chart obj renders with: the version it pins, else
// the kind's default. A pin to a version the kind does not ship is
// refused with the shipped versions (watchconfig.ChartVersions.CheckPin),
// as the runtime refuses it.
func (k *checkedKind) chartOf(obj *unstructured.Unstructured) (*checkedChart, *field.Error) {
	v, ok := obj.GetAnnotations()[rollout.PinAnnotation]
	if !ok {
		return k.def, nil
	}
	if err := k.watch.Versions.CheckPin(v); err != nil {
		return nil, field.Invalid(field.NewPath("metadata", "annotations").Key(rollout.PinAnnotation), v, err.Error())
	}
	if c, ok := k.pinned[v]; ok {
		return c, nil
	}
	return k.def, nil
}

// Hosts configures the hostname check: Ingresses finds the Ingresses that
// serve a host (nil turns the check off), Scope is how far a host must be
// unique.
type Hosts struct {
	Ingresses claims.IngressIndex
	Scope     claims.HostScope
}

// New loads the charts of the watches file f (as the runtime does, with
// the same defaults, the image defaults of its entries, their allowances,
// their post-render patches and the chart versions they ship) for the
// kinds the API server knows. Releases of cluster-scoped kinds are looked
// for in releaseNamespace, as the runtime stores them. reader must read
// from the API server, not from a cache.
func New(cfg *rest.Config, mapper meta.RESTMapper, reader client.Reader, f watchconfig.File, releaseNamespace string, hosts Hosts) (*Checker, error) {
	resolved, err := watchconfig.ResolveAll(f.Watches, watchconfig.Defaults())
	if err != nil {
		return nil, err
	}
	if err := watchconfig.SetImageDefaults(resolved, f.Images); err != nil {
		return nil, err
	}
	watchconfig.SetConfinement(resolved, f.Confinements)
	watchconfig.SetPostRender(resolved, f.PostRenders)
	watchconfig.SetVersions(resolved, f.Versions, f.Rollouts)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create discovery client: %w", err)
	}
	p := &Checker{
		kinds:    map[schema.GroupKind]*checkedKind{},
		reader:   reader,
		cfg:      cfg,
		discover: memory.NewMemCacheClient(dc),
		caps:     helmconfig.NewCapabilities(helmconfig.CapabilitiesMaxAge),
		renders:  newRenderCache(renderCacheSize),
		mapper:   mapper,
		claims:   claims.Checker{Reader: reader, Ingresses: hosts.Ingresses, HostScope: hosts.Scope},
	}
	for _, rw := range resolved {
		clusterScoped, err := watchconfig.IsClusterScoped(mapper, rw.GVK)
		if err != nil {
			return nil, err
		}
		sel, err := metav1.LabelSelectorAsSelector(&rw.Selector)
		if err != nil {
			return nil, fmt.Errorf("selector of %s: %w", rw.GVK, err)
		}
		def, err := newCheckedChart(rw, rw.Chart, rw.ChartPath)
		if err != nil {
			return nil, err
		}
		k := &checkedKind{watch: rw, selector: sel, clusterScoped: clusterScoped, def: def, pinned: map[string]*checkedChart{}}
		for _, v := range rw.Versions.Shipped() {
			if v == rw.Versions.Default {
				continue
			}
			chrt, _ := rw.Versions.Chart(v)
			if k.pinned[v], err = newCheckedChart(rw, chrt, fmt.Sprintf("%s version %s", rw.ChartPath, v)); err != nil {
				return nil, err
			}
		}
		if clusterScoped {
			k.releaseNamespace = releaseNamespace
		}
		p.kinds[rw.GVK.GroupKind()] = k
	}
	return p, nil
}

// Kinds lists the kinds the check covers, in a stable order.
func (p *Checker) Kinds() []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(p.kinds))
	for _, k := range p.kinds {
		out = append(out, k.watch.GVK)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Reconciles reports whether the runtime reconciles obj: its kind has a
// watch, and its labels match the watch's selector. Check passes any other
// resource.
func (p *Checker) Reconciles(obj *unstructured.Unstructured) bool {
	return p.kindOf(obj) != nil
}

// kindOf returns the kind of obj if the runtime reconciles obj, else nil.
func (p *Checker) kindOf(obj *unstructured.Unstructured) *checkedKind {
	k, ok := p.kinds[obj.GroupVersionKind().GroupKind()]
	if !ok || !k.selector.Matches(labels.Set(obj.GetLabels())) {
		return nil
	}
	return k
}

// Check returns what the runtime would refuse about obj: a chart version
// it pins that its kind does not ship, a release of its
// name that another resource owns or claims, a spec its chart (the
// version it pins, else the kind's default) does not
// render with, or renders into a release record larger than a Secret may
// hold (release.CheckInstallRecord), a rendered object outside what the
// kind may place (release.Confinement), or one that exists and is not its
// release's;
// and a rendered Ingress host another resource serves. old is the stored
// object of an update, nil on create. The warnings name the Secrets and
// ConfigMaps the rendered workloads read that do not exist yet. An error
// means the check itself could not be made.
//
// A resource the runtime does not reconcile (a kind without a watch, labels
// outside the watch's selector) passes.
func (p *Checker) Check(ctx context.Context, obj, old *unstructured.Unstructured) (field.ErrorList, []string, error) {
	k := p.kindOf(obj)
	if k == nil {
		return nil, nil, nil
	}
	ns := obj.GetNamespace()
	if k.clusterScoped {
		ns = k.releaseNamespace
	}
	name := obj.GetName()
	namePath := field.NewPath("metadata", "name")
	if invalid := release.CheckName(name, k.watch.GVK.Kind); invalid != nil {
		return field.ErrorList{field.Invalid(namePath, name, invalid.Error())}, nil, nil
	}
	chrt, invalid := k.chartOf(obj)
	if invalid != nil {
		return field.ErrorList{invalid}, nil, nil
	}
	claimant := release.OwnerOf(obj)
	msg, err := p.otherClaim(ctx, k, claimant, ns)
	if err != nil || msg != "" {
		return forbidden(namePath, msg), nil, err
	}
	if msg, err = p.releaseOwner(ctx, claimant, ns); err != nil || msg != "" {
		return forbidden(namePath, msg), nil, err
	}
	objs, err := p.render(ctx, k, chrt, name, ns, old != nil, obj)
	if err != nil {
		if errs, warnings, ok := ValuesFromAnswer(err); ok {
			return errs, warnings, nil
		}
		var refused *renderError
		if errors.As(err, &refused) {
			return field.ErrorList{{Type: field.ErrorTypeInvalid, Field: "spec", BadValue: field.OmitValueType{}, Detail: refused.Error()}}, nil, nil
		}
		var tooLarge *release.RecordTooLargeError
		if errors.As(err, &tooLarge) {
			return field.ErrorList{{Type: field.ErrorTypeTooLong, Field: "spec", BadValue: field.OmitValueType{}, Detail: tooLarge.Error()}}, nil, nil
		}
		return nil, nil, err
	}
	// Where the objects land comes before who holds them: an object the
	// release may not place at all is refused whoever holds it.
	if err := k.watch.Confinement.Check(k.watch.GVK.Kind, obj.GetNamespace(), claims.Placements(objs)); err != nil {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), err.Error())}, nil, nil
	}
	spec, _ := obj.Object["spec"].(map[string]interface{})
	c := claims.Claimant{Owner: claimant, ReleaseName: name, ReleaseNamespace: ns, Spec: spec}
	objClash, err := p.claims.Objects(ctx, objs, c)
	if err != nil {
		return nil, nil, err
	}
	if objClash != nil {
		return field.ErrorList{field.Forbidden(clashPath(objClash.Field, namePath), objClash.Error())}, nil, nil
	}
	hostClash, err := p.claims.Hosts(ctx, objs, c)
	if err != nil {
		return nil, nil, err
	}
	if hostClash != nil {
		return field.ErrorList{field.Forbidden(clashPath(hostClash.Field, field.NewPath("spec")), hostClash.Error())}, nil, nil
	}
	warnings, err := p.missingReferences(ctx, objs)
	return nil, warnings, err
}

// missingReferences warns about each Secret, ConfigMap or key that a
// rendered workload's Pods read, that the release does not render itself
// and that does not exist (yet): the resource is admitted, since the
// Secret may well be created next, but its Pods will not start until then.
func (p *Checker) missingReferences(ctx context.Context, objs []claims.Object) ([]string, error) {
	rendered := map[string]bool{}
	for _, o := range objs {
		if o.GVK.Group == "" && (o.GVK.Kind == workloadrefs.Secret || o.GVK.Kind == workloadrefs.ConfigMap) {
			rendered[o.Namespace+"/"+o.GVK.Kind+"/"+o.Name] = true
		}
	}
	var warnings []string
	for _, o := range objs {
		var external []workloadrefs.Ref
		for _, r := range o.References {
			if !rendered[o.Namespace+"/"+r.ObjectKey()] {
				external = append(external, r)
			}
		}
		if len(external) == 0 {
			continue
		}
		st, err := workloadrefs.Read(ctx, p.reader, o.Namespace, external, nil)
		if err != nil {
			return nil, err
		}
		for _, r := range st.Missing {
			warnings = append(warnings, fmt.Sprintf("%s in namespace %s does not exist yet: the Pods of %s read it and will not start until it does", r, o.Namespace, o))
		}
	}
	return warnings, nil
}

// clashPath is the path of the spec value an answer names ("spec.a.b"),
// else def.
func clashPath(specPath string, def *field.Path) *field.Path {
	if specPath == "" {
		return def
	}
	parts := strings.Split(specPath, ".")
	p := field.NewPath(parts[0], parts[1:]...)
	return p
}

func forbidden(path *field.Path, msg string) field.ErrorList {
	if msg == "" {
		return nil
	}
	return field.ErrorList{field.Forbidden(path, msg)}
}

// otherClaim names the resource of another kind that claims the release
// name in ns: it owns the release already, or will install it, or waits
// for it.
func (p *Checker) otherClaim(ctx context.Context, self *checkedKind, claimant release.Owner, ns string) (string, error) {
	for gk, k := range p.kinds {
		if gk == claimant.GroupKind {
			continue
		}
		key := client.ObjectKey{Namespace: ns, Name: claimant.Name}
		if k.clusterScoped {
			if k.releaseNamespace != ns {
				continue
			}
			key.Namespace = ""
		}
		var other metav1.PartialObjectMetadata
		other.SetGroupVersionKind(k.watch.GVK)
		err := p.reader.Get(ctx, key, &other)
		switch {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			continue
		case err != nil:
			return "", fmt.Errorf("look up %s %s: %w", gk.Kind, key, err)
		}
		owner := release.Owner{GroupKind: gk, Namespace: key.Namespace, Name: key.Name}
		if other.GetDeletionTimestamp() != nil {
			return fmt.Sprintf("release %s in namespace %s belongs to %s, which is being deleted; create this %s again once it is gone",
				claimant.Name, ns, owner, self.watch.GVK.Kind), nil
		}
		return (&release.ConflictError{Release: claimant.Name, Namespace: ns, Owner: &owner, Claimant: self.watch.GVK.Kind}).Error(), nil
	}
	return "", nil
}

// releaseOwner judges the latest record of the release in ns the way the
// ownership layer does, from the labels and owner reference of its storage
// Secret: a record of another resource, or of a release installed by hand,
// is a conflict; one of an earlier resource of the same kind and name is
// adopted.
func (p *Checker) releaseOwner(ctx context.Context, claimant release.Owner, ns string) (string, error) {
	var records metav1.PartialObjectMetadataList
	records.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := p.reader.List(ctx, &records, client.InNamespace(ns),
		client.MatchingLabels{"owner": "helm", "name": claimant.Name}); err != nil {
		return "", fmt.Errorf("list the records of release %s/%s: %w", ns, claimant.Name, err)
	}
	latest := release.LatestRecord(records.Items)
	if latest == nil {
		return "", nil
	}
	rec, ok := release.RecordOwner(latest, ns, claimant)
	conflict := &release.ConflictError{Release: claimant.Name, Namespace: ns, Claimant: claimant.GroupKind.Kind}
	if release.Judge(rec, ok, claimant) == release.Foreign {
		if ok {
			conflict.Owner = &rec
		}
		return conflict.Error(), nil
	}
	return "", nil
}

// renderError is a chart that does not render with a resource's spec.
type renderError struct {
	chart string
	err   error
}

func (e *renderError) Error() string {
	return fmt.Sprintf("chart %s does not render with this spec: %v", e.chart, e.err)
}

func (e *renderError) Unwrap() error { return e.err }

// render renders obj's chart with obj's spec the way an install (or, for
// an update, an upgrade) would: the same override values and generated
// values (a placeholder of the declared length, so that no generated
// value can appear in an answer), the same checks of the chart's
// kubeVersion and values schema, the same capabilities, and lookups
// against the live cluster. It returns the objects the chart renders, or
// a *release.RecordTooLargeError when the record Helm would store for the
// render is larger than a Secret may hold (release.CheckInstallRecord).
// Results of charts that do not look anything up are remembered by
// release digest, name and namespace. c is the chart version obj renders
// with (checkedKind.chartOf).
func (p *Checker) render(ctx context.Context, k *checkedKind, c *checkedChart, name, ns string, upgrade bool, obj *unstructured.Unstructured) ([]claims.Object, error) {
	// The values the reconciler computes (release.Values), generated
	// values filled with placeholders.
	spec, _ := obj.Object["spec"].(map[string]interface{})
	vals, err := c.values.Compute(spec, release.Placeholder, p.valuesFrom(ctx, k, obj))
	if err != nil {
		var vf *release.ValuesFromError
		if errors.As(err, &vf) || apierrors.IsForbidden(err) {
			return nil, err
		}
		return nil, &renderError{chart: c.name, err: err}
	}
	caps, err := p.caps.Get(p.discover)
	if err != nil {
		return nil, fmt.Errorf("discover the API server's capabilities: %w", err)
	}
	digest, cacheable, err := release.Digest(c.digest, vals, caps)
	if err != nil {
		return nil, err
	}
	// Kinds that share a chart may post-render it differently.
	digest = k.watch.PostRender.Salt(digest)
	key := strings.Join([]string{digest, ns, name, strconv.FormatBool(upgrade)}, "\x00")
	if cacheable {
		if r, ok := p.renders.get(key); ok {
			return r.objects, r.err
		}
	}
	objs, err := p.renderChart(ctx, k, c.chart, vals, chartutil.ReleaseOptions{
		Name: name, Namespace: ns, Revision: 1, IsInstall: !upgrade, IsUpgrade: upgrade,
	}, caps)
	var tooLarge *release.RecordTooLargeError
	if err != nil && !errors.As(err, &tooLarge) {
		err = &renderError{chart: c.name, err: err}
	}
	if cacheable {
		p.renders.put(key, rendered{objects: objs, err: err})
	}
	return objs, err
}

func (p *Checker) renderChart(ctx context.Context, k *checkedKind, chrt *chart.Chart, vals map[string]interface{}, opts chartutil.ReleaseOptions, caps *chartutil.Capabilities) ([]claims.Object, error) {
	if manifest.HasDependencies(chrt) {
		// Helm enables, disables and renames subcharts on the chart it is
		// given: each render gets its own copy of the kind's.
		chrt = manifest.CopyChart(chrt)
		if err := chartutil.ProcessDependenciesWithMerge(chrt, vals); err != nil {
			return nil, err
		}
	}
	files, err := claims.Render(ctx, p.cfg, chrt, vals, opts, caps)
	if err != nil {
		return nil, err
	}
	// The kind's post-render patches, as the runtime's install and upgrade
	// apply them: the checks below judge the patched objects.
	if files, err = k.watch.PostRender.Files(files); err != nil {
		return nil, err
	}
	// The record Helm would store for this render must fit its Secret.
	if err := release.CheckInstallRecord(opts.Name, opts.Namespace, chrt, vals, files); err != nil {
		return nil, err
	}
	// Objects of the chart's own CRDs are placed by the scope their CRD
	// declares while the API server does not serve them yet: the runtime
	// installs crds/ before the templates.
	crds, err := manifest.ChartCRDs(chrt)
	if err != nil {
		return nil, err
	}
	return claims.FromManifests(files, opts.Namespace, claims.WithCRDs(p.mapper, crds))
}

// renderCacheSize bounds the remembered render results; an entry is a
// digest, the rendered objects' coordinates and an error.
const renderCacheSize = 4096

// rendered is the result of one render.
type rendered struct {
	objects []claims.Object
	err     error
}

// renderCache remembers render results, forgetting the oldest first.
type renderCache struct {
	mu    sync.Mutex
	max   int
	m     map[string]rendered
	order []string
}

func newRenderCache(size int) *renderCache {
	return &renderCache{max: size, m: map[string]rendered{}}
}

func (c *renderCache) get(key string) (rendered, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[key]
	return r, ok
}

func (c *renderCache) put(key string, r rendered) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; ok {
		return
	}
	if len(c.order) >= c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[key] = r
	c.order = append(c.order, key)
}
