package testkit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Editor edits one resource's spec every interval as a server-side dry
// run, and counts the edits the API server refused: the admission webhook
// is called for a dry-run edit as for a real one (its configuration's
// matchConditions see a changed spec), and nothing is stored, so the
// operator has no upgrade to do. It measures how available the webhook is
// while the operator restarts or upgrades.
type Editor struct {
	stop, done chan struct{}

	mu      sync.Mutex
	sent    int
	refused []string
	slowest time.Duration
}

// EditorResult is what an Editor saw.
type EditorResult struct {
	Sent int
	// Refused are the refused edits, each "hh:mm:ss.mmm error".
	Refused []string
	// Slowest is the longest an edit took, refused or not.
	Slowest time.Duration
}

// StartEditor starts editing spec.<field> (a map) of the resource gvk
// ns/name every interval with c.
func StartEditor(c client.Client, gvk schema.GroupVersionKind, ns, name, field string, interval time.Duration) *Editor {
	e := &Editor{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-e.stop:
				return
			case <-tick.C:
			}
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(gvk)
			obj.SetNamespace(ns)
			obj.SetName(name)
			patch := fmt.Sprintf(`{"spec":{%q:{"edit":"%d"}}}`, field, i)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			start := time.Now()
			err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)), client.DryRunAll)
			took := time.Since(start)
			cancel()
			e.mu.Lock()
			e.sent++
			e.slowest = max(e.slowest, took)
			if err != nil {
				e.refused = append(e.refused, time.Now().Format("15:04:05.000")+" "+err.Error())
			}
			e.mu.Unlock()
		}
	}()
	return e
}

// Finish stops the editor and returns what it saw.
func (e *Editor) Finish() EditorResult {
	close(e.stop)
	<-e.done
	e.mu.Lock()
	defer e.mu.Unlock()
	return EditorResult{Sent: e.sent, Refused: e.refused, Slowest: e.slowest}
}
