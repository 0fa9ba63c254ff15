package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/acme/platform-operator/hack/bench/internal/benchkit"
	"github.com/acme/platform-operator/internal/gen/chartrender"
)

// floorName names the floor in tables, ratios and the plot.
const floorName = "floor"

// The floor is what the same work costs with no Helm and no operator: a
// bare client renders the chart once per resource (the resource's name as
// the release name, its spec as values) and creates the objects, with as
// many requests in flight as the benchmark's creates. "All Deployed" is
// the time until every object of every resource is created, the latency of
// a resource its render and creates. For the edit phase, each resource is
// rendered again with the edited spec and only the objects whose content
// changed are patched. No custom resources, release records, status or
// Events: ours divided by the floor is the cost of everything the operator
// adds, and the figure to drive down.
func measureFloor(cfg config, n int) (Result, error) {
	res := Result{Runtime: floorName, N: n}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	auditLog := auditLogPath(cfg, floorName, n)
	env, stop, err := newBenchEnv(ctx, cfg, "bench-floor-", auditLog)
	defer stop()
	if err != nil {
		return res, err
	}
	dyn := env.dyn
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(env.rc)))
	ch, err := chartrender.LoadChart(cfg.chartDir)
	if err != nil {
		return res, err
	}
	render := func(name string, spec map[string]any) ([]*unstructured.Unstructured, error) {
		r, err := chartrender.RenderChart(ch, chartrender.Options{ReleaseName: name, Namespace: ns, Values: spec})
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", name, err)
		}
		return r.Objects, nil
	}
	spec, err := cfg.specValues()
	if err != nil {
		return res, err
	}

	procs := benchkit.ClusterProcesses(env.cluster.Pid, nil)
	procs.Mark()
	var mu sync.Mutex
	var lat []time.Duration
	var objects int
	rendered := make([][]*unstructured.Unstructured, n)
	stopProfile := env.profile(fmt.Sprintf("%s-%d-install", floorName, n))
	start := time.Now()
	err = benchkit.Parallel(n, createWorkers, func(i int) error {
		t0 := time.Now()
		objs, err := render(resourceName(i), spec)
		if err != nil {
			return err
		}
		for _, o := range objs {
			m, err := mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
			if err != nil {
				return err
			}
			if _, err := dyn.Resource(m.Resource).Namespace(ns).Create(ctx, o, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create %s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
		d := time.Since(t0)
		mu.Lock()
		lat = append(lat, d)
		objects += len(objs)
		rendered[i] = objs
		mu.Unlock()
		return nil
	})
	if err != nil {
		return res, err
	}
	res.AllDeployed, res.Deployed = time.Since(start), n
	sorted := benchkit.Sorted(lat)
	res.LatencyP50, res.LatencyP99 = benchkit.Percentile(sorted, 50), benchkit.Percentile(sorted, 99)
	res.RequestsPerInstall = float64(objects) / float64(n)
	fmt.Printf("   created the objects of %d releases (%d objects) in %s, p50 %s, p99 %s\n", n, objects,
		res.AllDeployed.Round(time.Millisecond), res.LatencyP50.Round(time.Millisecond), res.LatencyP99.Round(time.Millisecond))
	fmt.Printf("   CPU seconds until all were created: %s\n", procs.CPUSince())
	stopProfile()
	if auditLog != "" {
		reportAudit(auditLog, start, start.Add(res.AllDeployed), n, "", "until all were created")
	}

	edited, err := cfg.editedValues()
	if err != nil {
		return res, err
	}
	start = time.Now()
	err = benchkit.Parallel(n, createWorkers, func(i int) error {
		objs, err := render(resourceName(i), edited)
		if err != nil {
			return err
		}
		for j, o := range objs {
			if j < len(rendered[i]) && sameContent(rendered[i][j], o) {
				continue
			}
			m, err := mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
			if err != nil {
				return err
			}
			b, err := json.Marshal(o.Object)
			if err != nil {
				return err
			}
			if _, err := dyn.Resource(m.Resource).Namespace(ns).Patch(ctx, o.GetName(), types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("patch %s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	res.AllUpgraded, res.Upgraded = time.Since(start), n
	fmt.Printf("   patched the changed objects of %d releases in %s\n", n, res.AllUpgraded.Round(time.Millisecond))
	if auditLog != "" {
		reportAudit(auditLog, start, start.Add(res.AllUpgraded), n, "", "until all were patched")
	}
	return res, nil
}

// sameContent reports whether two renderings of an object are equal.
func sameContent(a, b *unstructured.Unstructured) bool {
	ja, err1 := json.Marshal(a.Object)
	jb, err2 := json.Marshal(b.Object)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
