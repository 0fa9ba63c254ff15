package helmruntime

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/acme/platform-operator/internal/operator/cachefilter"
	"github.com/acme/platform-operator/internal/operator/helmstorage"
)

// releaseRecordField indexes the cached Secrets that are Helm release
// records by the name of their release.
const releaseRecordField = "platform-operator.acme.com/helm-release"

// recordIndex answers which revisions of a release have a record from the
// manager's cache of Secrets, which holds every record's metadata (not
// its payload, see cachefilter.CacheOptions): the storage then reads the records by
// name, and checks that the cache does not lag, instead of listing every
// Secret of the namespace (helmstorage.NewIndexedMemo).
type recordIndex struct {
	cache client.Reader
	// own are the releases of which this process stored records.
	own helmstorage.OwnRecords
}

// newRecordIndex indexes mgr's cached Secrets by release and returns the
// index. The manager's cache is shared by every kind: one index serves all.
func newRecordIndex(ctx context.Context, mgr manager.Manager) (*recordIndex, error) {
	err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Secret{}, releaseRecordField, func(o client.Object) []string {
		if !cachefilter.IsReleaseRecord(o) {
			return nil
		}
		return []string{o.GetLabels()["name"]}
	})
	if err != nil {
		return nil, fmt.Errorf("index the release records: %w", err)
	}
	return &recordIndex{cache: mgr.GetCache()}, nil
}

// Records returns the revisions of release's records in namespace that
// the cache holds, with the resourceVersion of each.
func (i *recordIndex) Records(ctx context.Context, namespace, release string) ([]helmstorage.IndexedRecord, error) {
	var records corev1.SecretList
	if err := i.cache.List(ctx, &records, client.InNamespace(namespace), client.MatchingFields{releaseRecordField: release}); err != nil {
		return nil, err
	}
	out := make([]helmstorage.IndexedRecord, 0, len(records.Items))
	for _, s := range records.Items {
		v, err := strconv.Atoi(s.Labels["version"])
		if err != nil {
			return nil, fmt.Errorf("release record %s/%s: version label %q", namespace, s.Name, s.Labels["version"])
		}
		out = append(out, helmstorage.IndexedRecord{Version: v, ResourceVersion: s.ResourceVersion})
	}
	return out, nil
}

// ownRecords are the releases of which this process stored records, nil
// without an index.
func (i *recordIndex) ownRecords() *helmstorage.OwnRecords {
	if i == nil {
		return nil
	}
	return &i.own
}
