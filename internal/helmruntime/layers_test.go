package helmruntime

import (
	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// newTestKind returns the state the layers of kind share, for tests that
// build action paths without a manager: no API client, Events dropped.
func newTestKind(kind string) *kindRuntime {
	rt := &runtimeState{
		log:         logr.Discard(),
		activity:    newReleaseActivity(clock.RealClock{}),
		dryRuns:     newDryRunCounter(),
		staleAfter:  DefaultStalePendingTimeout,
		hookTimeout: DefaultHookTimeout,
	}
	return &kindRuntime{
		rt:           rt,
		watch:        ResolvedWatch{GVK: schema.GroupVersionKind{Kind: kind}},
		nsFor:        ReleaseNamespaceMapper(false, ""),
		recorder:     &record.FakeRecorder{}, // no channel: Events are dropped
		log:          logr.Discard(),
		refusals:     newRefusals(),
		capabilities: newCapabilitiesCache(CapabilitiesMaxAge),
		charts:       &chartDigests{},
	}
}

// dryRunCount reads the dry-run counter of kind and result from reg.
func dryRunCount(reg prometheus.Gatherer, kind, result string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() != "helmruntime_dry_run_upgrades_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// libraryPath returns a getter of k's releases: the library's, under
// layers and the bottom layers every path has (release namespace,
// capabilities).
func (k *kindRuntime) libraryPath(cfg *rest.Config, mapper meta.RESTMapper, layers ...layer) (helmclient.ActionClientGetter, error) {
	base, err := newLibraryGetter(cfg, mapper, k.nsFor, k.capabilities)
	if err != nil {
		return nil, err
	}
	return &layeredGetter{base: base, nsFor: k.nsFor, layers: append(layers, installInReleaseNamespace, k.capabilities.layer)}, nil
}
