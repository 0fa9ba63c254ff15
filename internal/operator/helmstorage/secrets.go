package helmstorage

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/clock"

	prelease "github.com/acme/platform-operator/internal/operator/release"
)

// Secrets is Helm's Secrets storage driver but for how it encodes a
// record: it writes the Secret Helm's driver writes (its name, type,
// labels and data key, the release as JSON, gzipped, base64), gzipped at
// prelease.RecordGzipLevel rather than at best compression
// (prelease.EncodeRecord). It reads a record by name with the request
// Helm's driver sends, decoded by prelease.DecodeRecord, and lists and
// deletes with Helm's own driver, whose decoder, like the helm CLI's,
// reads a record gzipped at any level.
//
// Every record it writes, as the API server returned it, is kept in own
// (when not nil), whose memos answer a read of it while the runtime's
// cache shows it unchanged since (Memo.readByName).
type Secrets struct {
	*driver.Secrets

	impl  corev1client.SecretInterface
	own   *OwnRecords
	clock clock.PassiveClock
}

var _ driver.Driver = (*Secrets)(nil)

// NewSecrets returns the driver of the release records in secrets, which
// keeps what it writes in own (nil: nowhere).
func NewSecrets(secrets corev1client.SecretInterface, own *OwnRecords) *Secrets {
	return &Secrets{Secrets: driver.NewSecrets(secrets), impl: secrets, own: own, clock: clock.RealClock{}}
}

// Get returns the release in the Secret named key, read as Helm's driver
// reads it but decoded by prelease.DecodeRecord, which decodes the chart
// of the runtime's records once per chart rather than once per read;
// driver.ErrReleaseNotFound when there is none. Its errors read as Helm's
// driver's.
func (d *Secrets) Get(key string) (*release.Release, error) {
	obj, err := d.impl.Get(context.Background(), key, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, driver.ErrReleaseNotFound
		}
		return nil, fmt.Errorf("get: failed to get %q: %w", key, err)
	}
	r, err := prelease.DecodeRecord(obj.Data["release"])
	if err != nil {
		return nil, fmt.Errorf("get: failed to decode data %q: %w", key, err)
	}
	r.Labels = userLabels(obj.Labels)
	return r, nil
}

// userLabels returns labels without the ones Helm's storage sets itself
// (driver.GetSystemLabels), as Helm's driver hands a record's labels on.
func userLabels(labels map[string]string) map[string]string {
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		if !slices.Contains(driver.GetSystemLabels(), k) {
			out[k] = v
		}
	}
	return out
}

// Create stores rls in a new Secret named key; driver.ErrReleaseExists
// when there is one. Its errors read as Helm's driver's.
func (d *Secrets) Create(key string, rls *release.Release) error {
	obj, err := d.object(key, rls, "createdAt")
	if err != nil {
		return fmt.Errorf("create: failed to encode release %q: %w", rls.Name, err)
	}
	created, err := d.impl.Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return driver.ErrReleaseExists
		}
		return fmt.Errorf("create: failed to create: %w", err)
	}
	d.own.keepWritten(created)
	return nil
}

// Update replaces the Secret named key with one holding rls. Its errors
// read as Helm's driver's.
func (d *Secrets) Update(key string, rls *release.Release) error {
	obj, err := d.object(key, rls, "modifiedAt")
	if err != nil {
		return fmt.Errorf("update: failed to encode release %q: %w", rls.Name, err)
	}
	updated, err := d.impl.Update(context.Background(), obj, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update: failed to update: %w", err)
	}
	d.own.keepWritten(updated)
	return nil
}

// object returns the Secret of rls named key, its labels set as Helm's
// driver sets them, in its order: the release's own labels, the time of
// the write as stamp (createdAt or modifiedAt), the release's own labels
// again (a record read by a query carries every label of its Secret, the
// stamps of earlier writes among them, and these win over the new
// stamp), then name, owner, status and version.
func (d *Secrets) object(key string, rls *release.Release, stamp string) (*corev1.Secret, error) {
	data, err := prelease.EncodeRecord(rls)
	if err != nil {
		return nil, err
	}
	labels := make(map[string]string, len(rls.Labels)+5)
	for k, v := range rls.Labels {
		labels[k] = v
	}
	labels[stamp] = fmt.Sprintf("%v", d.clock.Now().Unix())
	for k, v := range rls.Labels {
		labels[k] = v
	}
	labels["name"] = rls.Name
	labels["owner"] = "helm"
	labels["status"] = rls.Info.Status.String()
	labels["version"] = strconv.Itoa(rls.Version)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key, Labels: labels},
		Type:       "helm.sh/release.v1",
		Data:       map[string][]byte{"release": data},
	}, nil
}
