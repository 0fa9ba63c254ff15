package helmstorage

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	prelease "github.com/acme/platform-operator/internal/operator/release"
)

// nginxRelease is the release Helm's install stores for the Nginx sample
// with every optional part on (config/samples/web_v1alpha1_nginx_full.yaml):
// the nginx chart, its values and its rendered manifest.
func nginxRelease(t testing.TB) *release.Release {
	t.Helper()
	chrt, err := loader.LoadDir("../../../helm-charts/nginx")
	if err != nil {
		t.Fatal(err)
	}
	sample, err := os.ReadFile("../../../config/samples/web_v1alpha1_nginx_full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cr struct {
		Spec map[string]interface{} `json:"spec"`
	}
	if err := yaml.Unmarshal(sample, &cr); err != nil {
		t.Fatal(err)
	}
	caps := *chartutil.DefaultCapabilities
	caps.KubeVersion = chartutil.KubeVersion{Version: "v1.35.0", Major: "1", Minor: "35"}
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: &caps,
		Log:          func(string, ...interface{}) {},
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = "nginx-full", "web"
	rel, err := install.Run(chrt, cr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// written returns the Secret named key in namespace ns of cs.
func written(g Gomega, cs *fake.Clientset, ns, key string) *corev1.Secret {
	s, err := cs.CoreV1().Secrets(ns).Get(context.Background(), key, metav1.GetOptions{})
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return s
}

// gunzip returns the JSON of a record's data.
func gunzip(g Gomega, data []byte) []byte {
	b, err := base64.StdEncoding.DecodeString(string(data))
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	r, err := gzip.NewReader(bytes.NewReader(b))
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	js, err := io.ReadAll(r)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return js
}

// stampAt returns the time of a record's stamp label (createdAt or
// modifiedAt), in seconds, as Helm's driver writes it.
func stampAt(g Gomega, s *corev1.Secret, stamp string) time.Time {
	sec, err := strconv.ParseInt(s.Labels[stamp], 10, 64)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred(), "label %s of %s", stamp, s.Name)
	return time.Unix(sec, 0)
}

// TestSecrets: the driver writes the Secret Helm's Secrets driver writes
// for the same release, but for its data's gzip level; Helm's driver (the
// helm CLI's) reads it back as the release it was. Creates and updates,
// of a release with labels of its own and of one read back by a query,
// which carries its Secret's labels, stamps included.
func TestSecrets(t *testing.T) {
	g := NewWithT(t)
	rel := nginxRelease(t)
	rel.Labels = map[string]string{"team": "web"}
	const ns, key = "web", "sh.helm.release.v1.nginx-full.v1"

	helmCS, oursCS := fake.NewClientset(), fake.NewClientset()
	helm := driver.NewSecrets(helmCS.CoreV1().Secrets(ns))
	clk := clocktesting.NewFakePassiveClock(time.Now())
	ours := NewSecrets(oursCS.CoreV1().Secrets(ns), nil)
	ours.clock = clk
	g.Expect(ours.Name()).To(Equal(helm.Name()))

	// same writes rel with both drivers and compares the two Secrets and
	// what Helm's driver reads. Ours writes at the second Helm's stamped,
	// unless rel carries the stamp, which both must then keep.
	same := func(write func(driver.Driver) error, stamp string) {
		g.Expect(write(helm)).To(Succeed())
		theirs := written(g, helmCS, ns, key)
		if _, kept := rel.Labels[stamp]; !kept {
			clk.SetTime(stampAt(g, theirs, stamp))
		}
		g.Expect(write(ours)).To(Succeed())
		mine := written(g, oursCS, ns, key)

		g.Expect(mine.Name).To(Equal(theirs.Name))
		g.Expect(mine.Type).To(Equal(theirs.Type))
		g.Expect(mine.Labels).To(Equal(theirs.Labels))
		g.Expect(mine.Data).To(HaveLen(1))
		g.Expect(mine.Data).To(HaveKey("release"))
		g.Expect(gunzip(g, mine.Data["release"])).To(MatchJSON(gunzip(g, theirs.Data["release"])), "the same JSON")
		g.Expect(len(mine.Data["release"])).To(BeNumerically("~", len(theirs.Data["release"]), len(theirs.Data["release"])/100),
			"a faster level, the chart gzipped apart: within 1 % of Helm's size")

		data, err := prelease.EncodeRecord(rel)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(mine.Data["release"]).To(Equal(data))
		size, err := prelease.RecordSize(rel)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(size).To(Equal(len(mine.Data["release"])), "the size check measures what is written")

		read, err := driver.NewSecrets(oursCS.CoreV1().Secrets(ns)).Get(key)
		g.Expect(err).NotTo(HaveOccurred())
		want, err := helm.Get(key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(read).To(Equal(want))
		g.Expect(read.Labels).To(Equal(map[string]string{"team": "web"}))
		g.Expect(read.Manifest).To(Equal(rel.Manifest))
	}

	t.Log("a new record")
	same(func(d driver.Driver) error { return d.Create(key, rel) }, "createdAt")
	g.Expect(ours.Create(key, rel)).To(MatchError(driver.ErrReleaseExists))

	// query reads the release back as Helm's storage does before an
	// update: with every label of its Secret.
	query := func() *release.Release {
		queried, err := driver.NewSecrets(oursCS.CoreV1().Secrets(ns)).Query(map[string]string{"name": "nginx-full", "owner": "helm"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(queried).To(HaveLen(1))
		return queried[0]
	}

	t.Log("an update of the release as a query reads it: createdAt kept, modifiedAt stamped")
	rel = query()
	created := rel.Labels["createdAt"]
	g.Expect(created).NotTo(BeEmpty())
	rel.Info.Status = release.StatusSuperseded
	same(func(d driver.Driver) error { return d.Update(key, rel) }, "modifiedAt")
	mine := written(g, oursCS, ns, key)
	g.Expect(mine.Labels).To(HaveKeyWithValue("status", "superseded"))
	g.Expect(mine.Labels).To(HaveKeyWithValue("createdAt", created))

	t.Log("a second update of it as a query reads it: the modifiedAt it read wins, as in Helm's driver")
	rel = query()
	modified := rel.Labels["modifiedAt"]
	rel.Info.Status = release.StatusFailed
	clk.SetTime(clk.Now().Add(time.Hour))
	same(func(d driver.Driver) error { return d.Update(key, rel) }, "modifiedAt")
	g.Expect(written(g, oursCS, ns, key).Labels).To(HaveKeyWithValue("modifiedAt", modified))

	t.Log("an update of a release with its own labels only")
	rel.Labels = map[string]string{"team": "web"}
	rel.Info.Status = release.StatusDeployed
	same(func(d driver.Driver) error { return d.Update(key, rel) }, "modifiedAt")

	t.Log("the errors read as Helm's")
	missing := "sh.helm.release.v1.nginx-full.v9"
	g.Expect(ours.Update(missing, rel).Error()).To(Equal(helm.Update(missing, rel).Error()))
}

// helmEncode encodes rel as Helm's Secrets driver does (its unexported
// encodeRelease): JSON, gzipped at best compression, base64.
func helmEncode(rel *release.Release) (string, error) {
	b, err := json.Marshal(rel)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return "", err
	}
	if _, err := w.Write(b); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// BenchmarkEncodeRecord measures the encoding of a release record, the
// Nginx sample with every optional part on (nginxRelease), as Helm's
// driver encodes it (helm) and as the runtime's does (ours), and the
// decoding of each, which Helm's driver does for every record it reads;
// then the gzip of the record's JSON alone at each level, the choice
// behind prelease.RecordGzipLevel. Each reports the record's size
// (record-bytes; gzip-bytes before base64). Figures: docs/benchmarks.md.
func BenchmarkEncodeRecord(b *testing.B) {
	rel := nginxRelease(b)
	js, err := json.Marshal(rel)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("manifest of %d bytes, JSON of %d bytes", len(rel.Manifest), len(js))
	helm, err := helmEncode(rel)
	if err != nil {
		b.Fatal(err)
	}
	ours, err := prelease.EncodeRecord(rel)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode/helm", func(b *testing.B) {
		for b.Loop() {
			if _, err := helmEncode(rel); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(helm)), "record-bytes")
	})
	b.Run("encode/ours", func(b *testing.B) {
		for b.Loop() {
			if _, err := prelease.EncodeRecord(rel); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(ours)), "record-bytes")
	})
	// What the storage and the action path measure before each record
	// created and each dry-run upgrade.
	b.Run("check/ours", func(b *testing.B) {
		for b.Loop() {
			if err := prelease.CheckRecord(rel); err != nil {
				b.Fatal(err)
			}
		}
	})
	decode := func(data []byte) func(b *testing.B) {
		return func(b *testing.B) {
			cs := fake.NewClientset(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.nginx-full.v1", Namespace: "web"},
				Data:       map[string][]byte{"release": data},
			})
			d := driver.NewSecrets(cs.CoreV1().Secrets("web"))
			for b.Loop() {
				if _, err := d.Get("sh.helm.release.v1.nginx-full.v1"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "record-bytes")
		}
	}
	b.Run("decode/helm", decode([]byte(helm)))
	b.Run("decode/ours", decode(ours))
	for level := gzip.BestSpeed; level <= gzip.BestCompression; level++ {
		b.Run("gzip/level="+strconv.Itoa(level), func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				w, err := gzip.NewWriterLevel(&buf, level)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := w.Write(js); err != nil {
					b.Fatal(err)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len()), "gzip-bytes")
		})
	}
}
