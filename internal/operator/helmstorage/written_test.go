package helmstorage

import (
	"context"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// serverIndex is a record index that holds what the fake API server
// holds: a cache that does not lag.
type serverIndex struct{ cs *fake.Clientset }

func (i serverIndex) Records(ctx context.Context, ns, name string) ([]IndexedRecord, error) {
	list, err := i.cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var records []IndexedRecord
	for _, s := range list.Items {
		if s.Labels["owner"] != "helm" || s.Labels["name"] != name {
			continue
		}
		v, err := strconv.Atoi(s.Labels["version"])
		if err != nil {
			return nil, err
		}
		records = append(records, IndexedRecord{Version: v, ResourceVersion: s.ResourceVersion})
	}
	return records, nil
}

// withResourceVersions makes cs give every Secret it stores a new
// resourceVersion, as the API server does.
func withResourceVersions(cs *fake.Clientset) {
	next := 0
	cs.PrependReactor("*", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(interface{ GetObject() runtime.Object }); ok {
			if s, ok := o.GetObject().(*corev1.Secret); ok {
				next++
				s.ResourceVersion = strconv.Itoa(next)
			}
		}
		return false, nil, nil
	})
}

// TestWrittenRecordsAnswerReads: a record this process wrote is read from
// what the write returned while the index shows the resourceVersion that
// write got, and is the release Helm's driver reads from the API server;
// a record written since by anyone else, or deleted and written again, is
// read from the API server.
func TestWrittenRecordsAnswerReads(t *testing.T) {
	g := NewWithT(t)
	rel := nginxRelease(t)
	rel.Labels = map[string]string{"team": "web"}
	const ns = "web"
	key := recordKey(rel.Name, rel.Version)

	cs := fake.NewClientset()
	withResourceVersions(cs)
	own := &OwnRecords{}
	below := &countingGets{countingDriver: countingDriver{Driver: NewSecrets(cs.CoreV1().Secrets(ns), own)}}
	memo := func() *storage.Storage {
		return storage.Init(NewIndexedMemo(context.Background(), below, serverIndex{cs}, own, ns))
	}

	g.Expect(memo().Create(rel)).To(Succeed())
	helm := driver.NewSecrets(cs.CoreV1().Secrets(ns))
	want, err := helm.Get(key)
	g.Expect(err).NotTo(HaveOccurred())

	got, err := memo().Deployed(rel.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(below.gets).To(BeZero(), "the record as written, no read")
	g.Expect(got).To(Equal(want))
	got.Chart.Metadata.Version = "edited"
	got.Labels["team"] = "edited"
	again, err := memo().Deployed(rel.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(want), "each read gets a release of its own")

	t.Run("written since by another: read from the API server", func(t *testing.T) {
		g := NewWithT(t)
		s, err := cs.CoreV1().Secrets(ns).Get(context.Background(), key, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		s.Labels["team"] = "another"
		_, err = cs.CoreV1().Secrets(ns).Update(context.Background(), s, metav1.UpdateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		before := below.gets
		got, err := memo().Deployed(rel.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(below.gets).To(Equal(before + 1))
		g.Expect(got.Labels).To(HaveKeyWithValue("team", "another"))
	})

	t.Run("deleted through a memo: forgotten", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(memo().Update(rel)).To(Succeed())
		_, err := memo().Delete(rel.Name, rel.Version)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(own.written).NotTo(HaveKey(ns + "/" + key))
	})

	t.Run("a record of Helm's own encoding: not held", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(helm.Create(key, rel)).To(Succeed())
		s, err := cs.CoreV1().Secrets(ns).Get(context.Background(), key, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		own.keepWritten(s)
		g.Expect(own.written).NotTo(HaveKey(ns + "/" + key))
	})
}
