package readycontroller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	sdkhandler "github.com/operator-framework/operator-lib/handler"
	"github.com/prometheus/client_golang/prometheus"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/acme/platform-operator/internal/operator/actionpath"
	"github.com/acme/platform-operator/internal/operator/manifest"
	"github.com/acme/platform-operator/internal/operator/readiness"
	"github.com/acme/platform-operator/internal/operator/watchconfig"
)

// The Ready condition: whether the objects of a release work.
//
// The library writes Deployed, ReleaseFailed, Irreconcilable, Initialized
// and Paused, and only when one of them changes. Ready and the
// observedGeneration of every condition are the runtime's, written in two
// places that share one judgement (Tracker.verdict):
//
//   - every status write of the library goes through StampStatus,
//     which stamps the generation it describes on status and on every
//     condition and sets Ready (a failed release is ReleaseFailed at once);
//   - the kind's readiness controller (this file) re-judges a release when
//     the health of one of its objects changes, when a revision was just
//     applied, and when the library acted without writing status, and
//     patches Ready alone. It is a second controller on the same leader
//     lease, whose work is reading the cache: the objects' health is kept
//     in the informer cache (cachefilter: readiness.Stash), so health
//     changes are watched, not polled, and a judgement costs no request.
//
// While a workload of a release waits for its Pods (its controller has
// done its part, Pods are not ready: readiness.Health.WaitingForPods),
// its Pods say why (ImagePullBackOff and the image, a claim not bound).
// The first such workload makes the controller watch Pods and
// PersistentVolumeClaims through the same cache, trimmed to what says why
// (cachefilter); from then on a Pod or claim whose summary changes wakes
// the releases whose waiting workloads select it (waitersOfPod), and a
// judgement reads them from the cache. A thousand releases waiting for
// capacity cost no request and no timer. Only workloads outside the
// cache's namespaces are still read from the API server, every
// readyRecheck at first and less often the longer they stay not ready
// (recheckAfter).

// ConditionReady is the condition type users wait on.
const ConditionReady = "Ready"

// Reasons of the Events of readiness changes.
const (
	ReasonBecameReady = "Ready"
	ReasonNotReady    = "NotReady"
)

const (
	// readyRecheck is how often a release whose Pods are outside the
	// cache (and so unwatched) is judged again while it waits for them,
	// to refresh what they say; see recheckAfter.
	readyRecheck    = 10 * time.Second
	readyRecheckMax = 5 * time.Minute
	// describePodsAfter is how long a workload may be not ready after its
	// revision was applied before its Pods are described: a rollout that
	// takes a few seconds writes no message about Pods that were starting.
	describePodsAfter = 5 * time.Second
	// cacheReadTimeout bounds a read of Pods or claims from the cache,
	// which waits for the cache to sync.
	cacheReadTimeout = 10 * time.Second
	// afterHook is how long after the post-release hook the controller
	// waits for the library's status write of the same reconcile.
	afterHook = 250 * time.Millisecond
	// reportWait bounds how long after an action ended the controller
	// waits for what reports it (the post-release hook, or the library's
	// status write of a failure) before it judges the objects anyway.
	reportWait = 10 * time.Second
)

// readyEntry is what the tracker knows of one custom resource.
type readyEntry struct {
	uid types.UID
	// objects are the release's objects, from its manifest.
	objects []readiness.Ref
	release readiness.Release
	// generation is the generation the library last acted on.
	generation int64
	// hookAt is when the post-release hook last ran: the library writes
	// its status right after it, so the controller waits for that write
	// (afterHook) instead of racing it.
	hookAt time.Time
	// stampedAt is when the library last wrote the status (StampStatus):
	// the end of a reconcile, whether its action succeeded or not.
	stampedAt time.Time
	// rev is the revision the post-release hook last saw applied.
	rev revisionInfo
	// held and resourceVersion are the custom resource's status and
	// version as this process last read or wrote them. The tracker's
	// entries hold the status as JSON (heldStatus); status is it decoded,
	// in the copy of an entry that a judgement works on (and nil in the
	// entries themselves).
	held            heldStatus
	status          map[string]any
	resourceVersion string
	// podsPolled: the last judgement read Pods from the API server, not
	// the cache (their namespace is not cached), so no watch wakes it.
	podsPolled bool
	// computed is the history and remediation this process last computed
	// for the resource, written or not: a status write that loses a
	// conflict must not lose what it recorded (a rollback's revision and
	// RolledBackAs), since the next write may be of a later revision.
	computed map[string]any
}

// Tracker judges the releases of one kind and writes their Ready.
type Tracker struct {
	gvk           schema.GroupVersionKind
	clusterScoped bool
	// concurrency is the kind's maxConcurrentReconciles: judging is mostly
	// reading the cache, and a burst of installs wakes every release.
	concurrency int
	// releaseKey names the release of a resource as the action path's
	// activity tracking does, and activity says whether an action on it
	// runs.
	releaseKey func(client.Object) string
	activity   *actionpath.Activity
	cache      cache.Cache
	apiReader  client.Reader
	writer     client.Client
	mapper     meta.RESTMapper
	recorder   record.EventRecorder
	clock      clock.PassiveClock
	log        logr.Logger
	wake       chan event.TypedGenericEvent[*unstructured.Unstructured]
	// remediation is the kind's (watches.yaml); remediations counts what
	// was done; wakeReconciler asks the kind's reconciler to carry out a
	// rollback (remediation.go).
	remediation    watchconfig.Remediation
	remediations   *prometheus.CounterVec
	wakeReconciler func(types.NamespacedName)
	// testResults are the outcomes of the chart tests the action path ran.
	testResults *actionpath.TestResults

	mu      sync.Mutex
	entries map[types.NamespacedName]*readyEntry
	// ctrl and watched: the readiness controller and the kinds of
	// objects it watches.
	ctrl    controller.Controller
	watched map[schema.GroupVersionKind]bool
	// waiting are the workloads that wait for Pods, by the resource whose
	// release holds them, and waitingIn the same resources by the
	// workloads' namespace: a Pod or claim there wakes them. podsWatched:
	// Pods and claims are watched (from the first waiting workload on).
	waiting     map[types.NamespacedName][]podInterest
	waitingIn   map[string]map[types.NamespacedName]bool
	podsWatched bool
}

// podInterest is a workload that waits for Pods: their namespace and
// selector.
type podInterest struct {
	namespace string
	selector  labels.Selector
}

// Config is what the readiness controller of one kind needs.
type Config struct {
	GVK           schema.GroupVersionKind
	ClusterScoped bool
	// Concurrency is the kind's maxConcurrentReconciles.
	Concurrency int
	// ReleaseNamespace picks the namespace of a resource's release.
	ReleaseNamespace func(client.Object) (string, error)
	// Activity says whether an action on a release runs.
	Activity *actionpath.Activity
	// Writer patches the custom resources' status (the shard's client).
	Writer   client.Client
	Recorder record.EventRecorder
	Log      logr.Logger
	// Remediation is the kind's (watches.yaml); Remediations counts what
	// was done (NewRemediationMetric).
	Remediation  watchconfig.Remediation
	Remediations *prometheus.CounterVec
	// WakeReconciler asks the kind's reconciler to carry out a rollback
	// or run the chart's tests.
	WakeReconciler func(types.NamespacedName)
	// TestResults are the outcomes of the chart tests the action path ran.
	TestResults *actionpath.TestResults
}

// New returns the readiness controller of one kind; Setup adds it to mgr,
// whose cache, API reader and REST mapper it reads.
func New(c Config, mgr ctrl.Manager) *Tracker {
	return &Tracker{
		gvk:           c.GVK,
		clusterScoped: c.ClusterScoped,
		concurrency:   c.Concurrency,
		releaseKey: func(o client.Object) string {
			ns, _ := c.ReleaseNamespace(o) // the mapper fails only for objects of no namespace and no default
			return actionpath.ReleaseKey(ns, o.GetName())
		},
		activity:       c.Activity,
		cache:          mgr.GetCache(),
		apiReader:      mgr.GetAPIReader(),
		writer:         c.Writer,
		mapper:         mgr.GetRESTMapper(),
		recorder:       c.Recorder,
		clock:          clock.RealClock{},
		log:            c.Log.WithName("readiness"),
		wake:           make(chan event.TypedGenericEvent[*unstructured.Unstructured], 1024),
		remediation:    c.Remediation,
		remediations:   c.Remediations,
		wakeReconciler: c.WakeReconciler,
		testResults:    c.TestResults,
		entries:        map[types.NamespacedName]*readyEntry{},
		watched:        map[schema.GroupVersionKind]bool{},
		waiting:        map[types.NamespacedName][]podInterest{},
		waitingIn:      map[string]map[types.NamespacedName]bool{},
	}
}

// setup adds the readiness controller of the kind to mgr: it is woken by
// the post-release hook (wake), by deletions of the custom resources (to
// forget them) and, once a release has shown them, by health changes of
// its objects.
func (t *Tracker) Setup(mgr ctrl.Manager) error {
	c, err := controller.New(fmt.Sprintf("%s-readiness", strings.ToLower(t.gvk.Kind)), mgr, controller.Options{Reconciler: t, MaxConcurrentReconciles: t.concurrency})
	if err != nil {
		return fmt.Errorf("readiness controller for %s: %w", t.gvk.Kind, err)
	}
	if err := c.Watch(source.Channel(t.wake, &handler.TypedEnqueueRequestForObject[*unstructured.Unstructured]{})); err != nil {
		return fmt.Errorf("readiness controller for %s: %w", t.gvk.Kind, err)
	}
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(t.gvk)
	deleted := predicate.TypedFuncs[*unstructured.Unstructured]{
		CreateFunc:  func(event.TypedCreateEvent[*unstructured.Unstructured]) bool { return false },
		UpdateFunc:  func(event.TypedUpdateEvent[*unstructured.Unstructured]) bool { return false },
		GenericFunc: func(event.TypedGenericEvent[*unstructured.Unstructured]) bool { return false },
	}
	if err := c.Watch(source.Kind(t.cache, cr, &handler.TypedEnqueueRequestForObject[*unstructured.Unstructured]{}, deleted)); err != nil {
		return fmt.Errorf("readiness controller for %s: %w", t.gvk.Kind, err)
	}
	t.mu.Lock()
	t.ctrl = c
	t.mu.Unlock()
	return nil
}

// Exec is the post-release hook: after every install, upgrade and drift
// repair it records the release's objects and the resource's status, makes
// sure the objects' kinds are watched, and wakes the readiness controller.
func (t *Tracker) Exec(obj *unstructured.Unstructured, rel release.Release, log logr.Logger) error {
	refs, gvks := t.objectsOf(rel, log)
	if err := t.watchKinds(gvks); err != nil {
		return err
	}
	key := client.ObjectKeyFromObject(obj)
	t.mu.Lock()
	e := t.entryLocked(key, obj.GetUID())
	e.objects = refs
	// A revision number comes back after an uninstall: the time Helm
	// recorded tells the new revision from the old.
	if fresh := revisionInfoOf(rel, time.Time{}); e.rev.revision != rel.Version || !fresh.appliedAt.Equal(e.rev.appliedAt) {
		e.release.Revision = rel.Version
		e.release.AppliedAt = t.appliedAt(rel)
		e.rev = revisionInfoOf(rel, e.release.AppliedAt)
	}
	e.generation = obj.GetGeneration()
	e.hookAt = t.clock.Now()
	// The resource as the library read it at the start of this reconcile
	// is older than a status this process wrote since (a Ready patched
	// while the library repaired drift): the status of this process's
	// last write wins; only a resource it knows no status of (a new one, or
	// one not seen since a restart) takes the library's copy.
	if st, ok := obj.Object["status"].(map[string]any); ok && !e.held.known() {
		e.held = holdStatus(st)
		e.resourceVersion = obj.GetResourceVersion()
		e.release = releaseFromStatus(st, e.release)
	} else if e.held.known() {
		e.release = releaseFromStatus(e.held.get(), e.release)
	}
	t.mu.Unlock()
	select {
	case t.wake <- event.TypedGenericEvent[*unstructured.Unstructured]{Object: keyOnly(t.gvk, key)}:
	default: // the controller is behind; the next health change judges again
	}
	return nil
}

// appliedAt is when rel's objects were last written: now when the action
// that just ended wrote them (the hook runs right after it), else the
// release's own record of its last deployment (a release this process
// sees for the first time after a restart).
func (t *Tracker) appliedAt(rel release.Release) time.Time {
	now := t.clock.Now()
	if rel.Info == nil || now.Sub(rel.Info.LastDeployed.Time) < recentAction {
		return now
	}
	return rel.Info.LastDeployed.Time
}

// unreported returns how long to wait before judging e's release when an
// action of this process on it ended (at ended) after the post-release
// hook and the library's status write last ran: the objects are then a
// revision the tracker does not know yet, and judged as the revision
// before it they say the wrong thing. A rollback's objects are all ready
// at once (the Deployment's old ReplicaSet takes over): judged as the
// revision rolled back, Ready turns True, then Progressing once the
// hook reports the rollback, then True again. The hook, or the status
// write of a failed action, comes within moments; after reportWait the
// release is judged anyway.
func unreported(ended time.Time, e *readyEntry, now time.Time) time.Duration {
	if ended.IsZero() || !ended.After(e.hookAt) || !ended.After(e.stampedAt) || now.Sub(ended) >= reportWait {
		return 0
	}
	return afterHook
}

// recentAction: a release deployed less than this long before the hook
// runs was deployed by the action that just ended (Helm records when an
// action started; an install on a busy API server takes seconds).
const recentAction = time.Minute

func keyOnly(gvk schema.GroupVersionKind, key types.NamespacedName) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	return u
}

// entryLocked returns the entry of key, a new one when there is none or it
// belonged to an earlier resource of the same name.
// remember keeps what a judgement computed (readyEntry.computed) in the
// resource's entry, whether or not its write succeeds.
func (t *Tracker) remember(key types.NamespacedName, uid types.UID, computed map[string]any) {
	if computed == nil {
		return
	}
	t.mu.Lock()
	t.entryLocked(key, uid).computed = computed
	t.mu.Unlock()
}

func (t *Tracker) entryLocked(key types.NamespacedName, uid types.UID) *readyEntry {
	e := t.entries[key]
	if e == nil || (uid != "" && e.uid != uid) {
		e = &readyEntry{uid: uid}
		t.entries[key] = e
	}
	return e
}

// objectsOf lists the objects of rel's manifest, in the namespaces Helm
// puts them in.
func (t *Tracker) objectsOf(rel release.Release, log logr.Logger) ([]readiness.Ref, []schema.GroupVersionKind) {
	var refs []readiness.Ref
	var gvks []schema.GroupVersionKind
	seen := map[schema.GroupVersionKind]bool{}
	for _, h := range manifest.Heads(rel.Manifest) {
		gvk := h.GroupVersionKind()
		if gvk.Empty() || h.Metadata.Name == "" {
			continue
		}
		ns := h.Metadata.Namespace
		m, err := t.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			log.V(1).Info("Not judging an object of unknown kind", "apiVersion", gvk.GroupVersion().String(), "kind", gvk.Kind, "error", err.Error())
			continue
		}
		if m.Scope.Name() == meta.RESTScopeNameRoot {
			ns = ""
		} else if ns == "" {
			ns = rel.Namespace
		}
		refs = append(refs, readiness.Ref{Group: gvk.Group, Kind: gvk.Kind, Namespace: ns, Name: h.Metadata.Name})
		if !seen[gvk] {
			seen[gvk] = true
			gvks = append(gvks, gvk)
		}
	}
	return refs, gvks
}

// watchKinds makes the readiness controller watch the health of objects
// of the given kinds, once per kind.
func (t *Tracker) watchKinds(gvks []schema.GroupVersionKind) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctrl == nil {
		return errors.New("readiness controller not set up")
	}
	for _, gvk := range gvks {
		if t.watched[gvk] {
			continue
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		if err := t.ctrl.Watch(source.Kind(t.cache, obj, handler.TypedEnqueueRequestsFromMapFunc(t.ownerOf), healthChanged)); err != nil {
			return fmt.Errorf("watch health of %s: %w", gvk, err)
		}
		t.watched[gvk] = true
	}
	return nil
}

// Watches reports whether the controller watches objects of gvk through
// the cache, which then holds every such object in its namespaces: from
// the first release that renders one on.
func (t *Tracker) Watches(gvk schema.GroupVersionKind) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.watched[gvk]
}

// healthChanged passes creations, deletions and updates that change an
// object's health (the summary the cache keeps instead of its status).
var healthChanged = predicate.TypedFuncs[*unstructured.Unstructured]{
	UpdateFunc: func(e event.TypedUpdateEvent[*unstructured.Unstructured]) bool {
		o, _ := readiness.Stashed(e.ObjectOld)
		n, _ := readiness.Stashed(e.ObjectNew)
		return o != n
	},
	GenericFunc: func(event.TypedGenericEvent[*unstructured.Unstructured]) bool { return false },
}

// ownerOf maps an object to the custom resource of this kind whose
// release holds it: its controller owner reference, or the owner
// annotations the library sets where a reference cannot be (cluster-scoped
// objects, other namespaces, kept objects).
func (t *Tracker) ownerOf(_ context.Context, obj *unstructured.Unstructured) []reconcile.Request {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		if ref.Kind == t.gvk.Kind && ref.APIVersion == t.gvk.GroupVersion().String() {
			key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}
			if t.clusterScoped {
				key.Namespace = ""
			}
			return []reconcile.Request{{NamespacedName: key}}
		}
		return nil
	}
	a := obj.GetAnnotations()
	if a[sdkhandler.TypeAnnotation] != t.gvk.Kind+"."+t.gvk.Group {
		return nil
	}
	var key types.NamespacedName
	if ns, name, ok := strings.Cut(a[sdkhandler.NamespacedNameAnnotation], "/"); ok {
		key = types.NamespacedName{Namespace: ns, Name: name}
	} else {
		key = types.NamespacedName{Name: a[sdkhandler.NamespacedNameAnnotation]}
	}
	if key.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}

// Reconcile judges the release of one custom resource and patches its
// Ready condition when the judgement changed.
func (t *Tracker) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(t.gvk)
	if err := t.cache.Get(ctx, req.NamespacedName, cr); apierrors.IsNotFound(err) {
		t.mu.Lock()
		delete(t.entries, req.NamespacedName)
		t.setWaitingLocked(req.NamespacedName, nil)
		t.mu.Unlock()
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	if t.activity.Busy(t.releaseKey(cr)) {
		// An install or upgrade is writing the objects; its post-release
		// hook wakes us (a failure is judged by the library's write).
		return reconcile.Result{}, nil
	}
	t.mu.Lock()
	e := t.entries[req.NamespacedName]
	if e == nil || e.uid != cr.GetUID() {
		// The library has not acted on this resource in this process
		// yet; its post-release hook will wake us.
		t.mu.Unlock()
		return reconcile.Result{}, nil
	}
	snapshot := *e
	t.mu.Unlock()
	snapshot.status = snapshot.held.get()

	now := t.clock.Now()
	if wait := unreported(t.activity.LastEnded(t.releaseKey(cr)), &snapshot, now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if wait := afterHook - now.Sub(snapshot.hookAt); wait > 0 || snapshot.status == nil {
		// The library's status write of this reconcile is still to come
		// (a new resource has no status before it).
		return reconcile.Result{RequeueAfter: max(wait, afterHook)}, nil
	}
	if wait := readiness.Settle - now.Sub(snapshot.release.AppliedAt); !snapshot.release.AppliedAt.IsZero() && wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	status, v, wait, d := t.judge(ctx, &snapshot, cr, now)
	t.remember(req.NamespacedName, cr.GetUID(), snapshot.computed)
	if !statusEqual(status, snapshot.status) && !t.onlyMessageChanged(ctx, &snapshot, cr, v, now) {
		var err error
		if d, err = t.patchStatus(ctx, req.NamespacedName, &snapshot, cr, status, v, d); err != nil {
			return reconcile.Result{}, err
		}
		if d != nil {
			t.announce(cr, d)
		}
	}
	if d != nil && d.wake && t.wakeReconciler != nil {
		t.wakeReconciler(req.NamespacedName)
	}
	var after time.Duration
	switch {
	case !v.WaitingForPods:
	case snapshot.podsPolled:
		after = recheckAfter(status, now)
	case now.Sub(snapshot.release.AppliedAt) < describePodsAfter:
		// The Pods are described from then on; until then nothing of
		// theirs was read, so their watch may have nothing to say.
		after = describePodsAfter - now.Sub(snapshot.release.AppliedAt)
	}
	if wait > 0 && (after == 0 || wait < after) {
		after = wait
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// judge returns the status e's release should have now (Ready, history,
// Stalled and remediation), the Ready verdict, how long until the
// revision's deadline, and a remediation decided now (remediation.go).
func (t *Tracker) judge(ctx context.Context, e *readyEntry, obj client.Object, now time.Time) (map[string]any, readiness.Verdict, time.Duration, *decision) {
	policy := t.policyOf(obj)
	v, testing := t.testVerdict(t.verdict(ctx, client.ObjectKeyFromObject(obj), e, now), e, obj, policy)
	status := t.statusWith(e, v, obj, now)
	wait, d := remediate(status, e, v, obj, policy, now)
	if testing && d == nil {
		// The chart's tests are to run: the kind's reconciler runs them
		// once this status (Ready reads Testing) is written.
		d = &decision{wake: true}
	}
	return status, v, wait, d
}

// statusWith is e's status with Ready v, and its history.
func (t *Tracker) statusWith(e *readyEntry, v readiness.Verdict, obj client.Object, now time.Time) map[string]any {
	status, computed := withRemediation(withReady(e.status, v, e.generation, now), e.status, e, v, obj, now)
	e.computed = computed
	return status
}

// onlyMessageChanged reports whether writing v over e's status would
// change only Ready's message, and that change says nothing new about
// Pods: a rollout that goes from "revision applied" to "Available: 1/3"
// to "Available: 2/3" costs no write until it is ready (or fails, or is
// gone), while what the Pods of a stuck workload say (an image that
// cannot be pulled, a Pod that cannot be scheduled) is written as soon as
// they say it, during an upgrade as after an install.
func (t *Tracker) onlyMessageChanged(_ context.Context, e *readyEntry, obj client.Object, v readiness.Verdict, now time.Time) bool {
	old := findCondition(e.status, ConditionReady)
	if old == nil {
		return false
	}
	oldMessage, _ := old["message"].(string)
	for _, d := range v.Details {
		if !strings.Contains(oldMessage, d) {
			return false
		}
	}
	v.Message = oldMessage
	status := t.statusWith(e, v, obj, now)
	remediate(status, e, v, obj, t.policyOf(obj), now)
	return statusEqual(status, e.status)
}

// recheckAfter is when a release that is not ready is judged again without
// a watch event: every readyRecheck at first, then less often the longer
// it has been not ready (a quarter of that time, at most readyRecheckMax),
// so that releases that stay broken cost a bounded trickle of requests.
func recheckAfter(st map[string]any, now time.Time) time.Duration {
	since := time.Duration(0)
	if c := findCondition(st, ConditionReady); c != nil {
		if ts, ok := c["lastTransitionTime"].(string); ok {
			if at, err := time.Parse(time.RFC3339, ts); err == nil {
				since = now.Sub(at)
			}
		}
	}
	return min(max(since/4, readyRecheck), readyRecheckMax)
}

// patchStatus writes status (the last known one with a new Ready,
// history and remediation) with a merge patch that fails when the
// resource changed since it was read; then it reads the resource again,
// judges again and retries once. It returns the decision the written
// status carries.
func (t *Tracker) patchStatus(ctx context.Context, key types.NamespacedName, e *readyEntry, obj client.Object, status map[string]any, v readiness.Verdict, d *decision) (*decision, error) {
	for attempt := 0; ; attempt++ {
		cr := keyOnly(t.gvk, key)
		cr.SetResourceVersion(e.resourceVersion)
		cr.SetUID(e.uid)
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": e.resourceVersion, "uid": string(e.uid)},
			"status": map[string]any{
				"conditions": status["conditions"], "observedGeneration": status["observedGeneration"],
				"history": status["history"], actionpath.StatusRemediation: status[actionpath.StatusRemediation],
				StatusChartVersion: status[StatusChartVersion],
			},
		})
		if err != nil {
			return nil, err
		}
		err = t.writer.Status().Patch(ctx, cr, client.RawPatch(types.MergePatchType, patch))
		if err == nil {
			t.written(key, e, cr, v)
			return d, nil
		}
		if !apierrors.IsConflict(err) || attempt > 0 {
			return nil, fmt.Errorf("write Ready of %s: %w", key, err)
		}
		fresh := keyOnly(t.gvk, key)
		if err := t.apiReader.Get(ctx, key, fresh); err != nil {
			return nil, fmt.Errorf("write Ready of %s: %w", key, err)
		}
		st, _ := fresh.Object["status"].(map[string]any)
		e.status = keptStatus(st)
		e.resourceVersion = fresh.GetResourceVersion()
		e.release = releaseFromStatus(st, e.release)
		status, v, _, d = t.judge(ctx, e, fresh, t.clock.Now())
	}
}

// written records a status this process wrote (cr is the server's answer)
// and reports a change of readiness as an Event.
func (t *Tracker) written(key types.NamespacedName, before *readyEntry, cr *unstructured.Unstructured, v readiness.Verdict) {
	wasReady := readyCondStatus(before.status, ConditionReady) == string(metav1.ConditionTrue)
	// A spec edit makes a ready release progress; that is what the user
	// asked for, not a warning. A release that stops being ready for the
	// same generation is.
	wasGeneration, _, _ := unstructured.NestedInt64(orEmpty(findCondition(before.status, ConditionReady)), "observedGeneration")
	st, _ := cr.Object["status"].(map[string]any)
	t.mu.Lock()
	if e := t.entries[key]; e != nil && e.uid == cr.GetUID() {
		e.held = holdStatus(st)
		e.resourceVersion = cr.GetResourceVersion()
		e.release = releaseFromStatus(st, e.release)
	}
	t.mu.Unlock()
	switch {
	case v.Ready && !wasReady:
		t.recorder.Eventf(cr, corev1.EventTypeNormal, ReasonBecameReady, "Release %s is ready: %s", key.Name, v.Message)
	case !v.Ready && wasReady && wasGeneration == generationOf(st):
		t.recorder.Eventf(cr, corev1.EventTypeWarning, ReasonNotReady, "Release %s is not ready (%s): %s", key.Name, v.Reason, v.Message)
	}
}

// verdict judges e's release now: by its conditions, then by the health of
// its objects in the cache, with the Pods of workloads that are not ready
// described once they had time to start. It records which workloads wait
// for Pods (setWaiting) before it reads any Pod, so that a Pod that
// changes after the read wakes the release again.
func (t *Tracker) verdict(ctx context.Context, key types.NamespacedName, e *readyEntry, now time.Time) readiness.Verdict {
	judged := false // by the objects' health, which records the waiting workloads
	e.podsPolled = false
	v := readiness.Judge(e.release, now, func() readiness.Verdict {
		judged = true
		var interests []podInterest
		observed := make([]readiness.Observed, 0, len(e.objects))
		for _, ref := range e.objects {
			o := readiness.Observed{Ref: ref, Health: t.health(ctx, ref)}
			if o.WaitingForPods && workloadKinds[schema.GroupKind{Group: ref.Group, Kind: ref.Kind}] {
				if sel, err := labels.Parse(o.PodSelector); err == nil && !sel.Empty() {
					interests = append(interests, podInterest{namespace: ref.Namespace, selector: sel})
				}
			}
			observed = append(observed, o)
		}
		t.setWaiting(key, interests)
		if len(interests) > 0 {
			if err := t.watchPods(); err != nil {
				t.log.Error(err, "Cannot watch Pods; waiting releases are rechecked on a timer")
			}
		}
		if now.Sub(e.release.AppliedAt) < describePodsAfter {
			return readiness.Evaluate(observed)
		}
		for i := range observed {
			if observed[i].WaitingForPods {
				var polled bool
				observed[i].Detail, polled = t.describePods(ctx, observed[i].Ref, observed[i].PodSelector)
				e.podsPolled = e.podsPolled || polled
			}
		}
		return readiness.Evaluate(observed)
	})
	if !judged { // by its conditions alone: it waits for no Pods
		t.setWaiting(key, nil)
	}
	return v
}

// setWaiting records the workloads of key's release that wait for Pods.
func (t *Tracker) setWaiting(key types.NamespacedName, interests []podInterest) {
	t.mu.Lock()
	t.setWaitingLocked(key, interests)
	t.mu.Unlock()
}

func (t *Tracker) setWaitingLocked(key types.NamespacedName, interests []podInterest) {
	for _, in := range t.waiting[key] {
		if m := t.waitingIn[in.namespace]; m != nil {
			delete(m, key)
			if len(m) == 0 {
				delete(t.waitingIn, in.namespace)
			}
		}
	}
	if len(interests) == 0 {
		delete(t.waiting, key)
		return
	}
	t.waiting[key] = interests
	for _, in := range interests {
		m := t.waitingIn[in.namespace]
		if m == nil {
			m = map[types.NamespacedName]bool{}
			t.waitingIn[in.namespace] = m
		}
		m[key] = true
	}
}

// watchPods makes the readiness controller watch Pods and claims, once.
func (t *Tracker) watchPods() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.podsWatched {
		return nil
	}
	if t.ctrl == nil {
		return errors.New("readiness controller not set up")
	}
	if err := t.ctrl.Watch(source.Kind(t.cache, &corev1.Pod{}, handler.TypedEnqueueRequestsFromMapFunc(t.waitersOfPod), podChanged)); err != nil {
		return fmt.Errorf("watch Pods: %w", err)
	}
	if err := t.ctrl.Watch(source.Kind(t.cache, &corev1.PersistentVolumeClaim{}, handler.TypedEnqueueRequestsFromMapFunc(t.waitersOfClaim), claimChanged)); err != nil {
		return fmt.Errorf("watch PersistentVolumeClaims: %w", err)
	}
	t.podsWatched = true
	return nil
}

// podChanged passes creations, deletions and updates that change what
// says why a Pod is not ready.
var podChanged = predicate.TypedFuncs[*corev1.Pod]{
	UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Pod]) bool {
		return readiness.PodSummary(e.ObjectOld) != readiness.PodSummary(e.ObjectNew)
	},
	GenericFunc: func(event.TypedGenericEvent[*corev1.Pod]) bool { return false },
}

// claimChanged passes creations, deletions and changes of phase.
var claimChanged = predicate.TypedFuncs[*corev1.PersistentVolumeClaim]{
	UpdateFunc: func(e event.TypedUpdateEvent[*corev1.PersistentVolumeClaim]) bool {
		return e.ObjectOld.Status.Phase != e.ObjectNew.Status.Phase
	},
	GenericFunc: func(event.TypedGenericEvent[*corev1.PersistentVolumeClaim]) bool { return false },
}

// waitersOfPod are the resources whose releases have a workload that
// waits for Pods and selects p.
func (t *Tracker) waitersOfPod(_ context.Context, p *corev1.Pod) []reconcile.Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []reconcile.Request
	set := labels.Set(p.Labels)
	for key := range t.waitingIn[p.Namespace] {
		for _, in := range t.waiting[key] {
			if in.namespace == p.Namespace && in.selector.Matches(set) {
				out = append(out, reconcile.Request{NamespacedName: key})
				break
			}
		}
	}
	return out
}

// waitersOfClaim are the resources whose releases have a workload that
// waits for Pods in c's namespace (a claim is named by the Pods that
// mount it, which a judgement reads).
func (t *Tracker) waitersOfClaim(_ context.Context, c *corev1.PersistentVolumeClaim) []reconcile.Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]reconcile.Request, 0, len(t.waitingIn[c.Namespace]))
	for key := range t.waitingIn[c.Namespace] {
		out = append(out, reconcile.Request{NamespacedName: key})
	}
	return out
}

// health reads ref's health from the cache, or from the API server when
// the cache does not hold its kind (objects outside the watched
// namespaces).
func (t *Tracker) health(ctx context.Context, ref readiness.Ref) readiness.Health {
	u := t.object(ref)
	key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	err := t.cache.Get(ctx, key, u)
	if err == nil {
		if h, ok := readiness.Stashed(u); ok {
			return h
		}
		return readiness.Observe(u)
	}
	if apierrors.IsNotFound(err) {
		return readiness.NotFound
	}
	u = t.object(ref)
	if err := t.apiReader.Get(ctx, key, u); apierrors.IsNotFound(err) {
		return readiness.NotFound
	} else if err != nil {
		return readiness.Health{Status: kstatus.UnknownStatus, Message: err.Error()}
	}
	return readiness.Observe(u)
}

// object is an empty unstructured object of ref's kind.
func (t *Tracker) object(ref readiness.Ref) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	gk := schema.GroupKind{Group: ref.Group, Kind: ref.Kind}
	version := "v1"
	if m, err := t.mapper.RESTMapping(gk); err == nil {
		version = m.GroupVersionKind.Version
	}
	u.SetGroupVersionKind(gk.WithVersion(version))
	return u
}

// workloadKinds are the kinds whose Pods explain why they are not ready.
var workloadKinds = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}:  true,
	{Group: "apps", Kind: "StatefulSet"}: true,
	{Group: "apps", Kind: "DaemonSet"}:   true,
	{Group: "batch", Kind: "Job"}:        true,
}

// describePods says why a waiting workload's Pods are not ready, from the
// Pods its selector (selector, from the cache's health; else from the
// workload on the API server) picks and the claims they mount; "" for
// other kinds or when nothing explains it. It reads the cache, and the API
// server only for a namespace the cache does not hold: then polled is true.
func (t *Tracker) describePods(ctx context.Context, ref readiness.Ref, selector string) (detail string, polled bool) {
	if !workloadKinds[schema.GroupKind{Group: ref.Group, Kind: ref.Kind}] {
		return "", false
	}
	sel, err := labels.Parse(selector)
	if err != nil || sel.Empty() {
		if sel, err = t.selectorFromServer(ctx, ref); err != nil {
			return "", true
		}
	}
	var reader client.Reader = t.cache
	pods := &corev1.PodList{}
	opts := []client.ListOption{client.InNamespace(ref.Namespace), client.MatchingLabelsSelector{Selector: sel}}
	// A cache that cannot list Pods (the operator may not watch them) never
	// syncs: the read gives up after cacheReadTimeout and asks the API
	// server instead.
	cacheCtx, cancel := context.WithTimeout(ctx, cacheReadTimeout)
	defer cancel()
	if err := t.cache.List(cacheCtx, pods, opts...); err != nil {
		reader, polled = t.apiReader, true
		if err := reader.List(ctx, pods, opts...); err != nil {
			return "", true
		}
	}
	claims := map[string]corev1.PersistentVolumeClaimPhase{}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			name := v.PersistentVolumeClaim.ClaimName
			if _, done := claims[name]; done {
				continue
			}
			pvc := &corev1.PersistentVolumeClaim{}
			readCtx := ctx
			if !polled {
				readCtx = cacheCtx
			}
			if err := reader.Get(readCtx, types.NamespacedName{Namespace: ref.Namespace, Name: name}, pvc); apierrors.IsNotFound(err) {
				claims[name] = "not found"
			} else if err == nil {
				claims[name] = pvc.Status.Phase
			}
		}
	}
	return readiness.DescribePods(pods.Items, claims), polled
}

// selectorFromServer reads a workload's Pod selector from the API server,
// for a workload whose health did not come with one.
func (t *Tracker) selectorFromServer(ctx context.Context, ref readiness.Ref) (labels.Selector, error) {
	w := t.object(ref)
	if err := t.apiReader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, w); err != nil {
		return nil, err
	}
	sel, found, err := unstructured.NestedMap(w.Object, "spec", "selector")
	if err != nil || !found {
		return nil, fmt.Errorf("%s has no selector", ref)
	}
	ls := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sel, ls); err != nil {
		return nil, err
	}
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || s.Empty() {
		return nil, fmt.Errorf("%s selects no Pods", ref)
	}
	return s, nil
}

// generationOf is the generation a status describes.
func generationOf(st map[string]any) int64 {
	g, _, _ := unstructured.NestedInt64(orEmpty(st), "observedGeneration")
	return g
}
