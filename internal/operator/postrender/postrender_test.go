package postrender

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// manifest is a rendered manifest as Helm hands it to a post-renderer: in
// install order, with "# Source:" comments.
const manifest = `---
# Source: web/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  a: b
---
# Source: web/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: web}
spec:
  ports: [{port: 80}]
---
# Source: web/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
      - name: exporter
        image: docker.io/nginx/nginx-prometheus-exporter:1.1.0
---
# Source: web/templates/worker.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-worker
  labels: {app: worker}
spec:
  selector:
    matchLabels: {app: worker}
  template:
    metadata:
      labels: {app: worker}
    spec:
      containers:
      - name: worker
        image: busybox:1.36
`

// objects decodes a manifest into its objects, in order.
func objects(t *testing.T, m string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, doc := range strings.Split(m, "\n---") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("decode %q: %v", doc, err)
		}
		if len(o) > 0 {
			out = append(out, o)
		}
	}
	return out
}

// at returns the value at a path of keys and list indexes.
func at(o any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := o.(map[string]any)
			o = m[k]
		case int:
			l, _ := o.([]any)
			if k >= len(l) {
				return nil
			}
			o = l[k]
		}
	}
	return o
}

func run(t *testing.T, c Config) []map[string]any {
	t.Helper()
	r, err := New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	out, err := r.Run(bytes.NewBufferString(manifest))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return objects(t, out.String())
}

func names(objs []map[string]any) []string {
	var out []string
	for _, o := range objs {
		out = append(out, at(o, "kind").(string)+"/"+at(o, "metadata", "name").(string))
	}
	return out
}

var order = []string{"ConfigMap/web-config", "Service/web", "Deployment/web", "Deployment/web-worker"}

func TestStrategicMergePatchWithTarget(t *testing.T) {
	g := NewWithT(t)
	objs := run(t, Config{Patches: []Patch{{
		Target: &Selector{Kind: "Deployment"},
		Patch: `apiVersion: apps/v1
kind: Deployment
metadata: {name: any}
spec:
  template:
    metadata: {labels: {team: platform}}
    spec:
      tolerations: [{key: dedicated, operator: Equal, value: platform, effect: NoSchedule}]
`,
	}}})
	g.Expect(names(objs)).To(Equal(order), "the order of the objects is kept")
	for _, d := range objs[2:] {
		g.Expect(at(d, "spec", "template", "metadata", "labels", "team")).To(Equal("platform"))
		g.Expect(at(d, "spec", "template", "metadata", "labels", "app")).NotTo(BeNil(), "the chart's labels stay")
		g.Expect(at(d, "spec", "template", "spec", "tolerations", 0, "key")).To(Equal("dedicated"))
		g.Expect(at(d, "metadata", "name")).NotTo(Equal("any"), "the patch's name is not the object's")
	}
	g.Expect(at(objs[1], "spec", "template")).To(BeNil(), "the Service is not a target")
	g.Expect(at(objs[2], "spec", "template", "spec", "containers", 1, "name")).To(Equal("exporter"), "containers merge by name")
}

func TestJSON6902PatchWithTarget(t *testing.T) {
	g := NewWithT(t)
	objs := run(t, Config{Patches: []Patch{{
		Target: &Selector{Kind: "Deployment", LabelSelector: "app=worker"},
		Patch: `- op: add
  path: /spec/template/spec/securityContext
  value: {runAsNonRoot: true}
- op: replace
  path: /spec/template/spec/containers/0/name
  value: job
`,
	}}})
	g.Expect(names(objs)).To(Equal(order))
	g.Expect(at(objs[3], "spec", "template", "spec", "securityContext", "runAsNonRoot")).To(BeTrue())
	g.Expect(at(objs[3], "spec", "template", "spec", "containers", 0, "name")).To(Equal("job"))
	g.Expect(at(objs[2], "spec", "template", "spec", "securityContext")).To(BeNil(), "the label selector leaves app=web out")
}

func TestImages(t *testing.T) {
	g := NewWithT(t)
	objs := run(t, Config{Images: []Image{
		{Name: "nginx", NewName: "registry.example.com/nginx", NewTag: "1.27"},
		{Name: "busybox", Digest: "sha256:0000000000000000000000000000000000000000000000000000000000000000"},
	}})
	g.Expect(at(objs[2], "spec", "template", "spec", "containers", 0, "image")).To(Equal("registry.example.com/nginx:1.27"))
	g.Expect(at(objs[2], "spec", "template", "spec", "containers", 1, "image")).To(Equal("docker.io/nginx/nginx-prometheus-exporter:1.1.0"), "another image's name is not rewritten")
	g.Expect(at(objs[3], "spec", "template", "spec", "containers", 0, "image")).To(Equal("busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000"))
}

func TestUnsetChangesNothing(t *testing.T) {
	g := NewWithT(t)
	r, err := New(Config{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r).To(BeNil())
	in := bytes.NewBufferString(manifest)
	out, err := r.Run(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.String()).To(Equal(manifest), "byte for byte")
	g.Expect(r.PostRenderer()).To(BeNil())
	g.Expect(r.Salt("0123456789abcdef")).To(Equal("0123456789abcdef"))
	files := map[string]string{"a.yaml": "x: y"}
	same, err := r.Files(files)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same).To(Equal(files))
}

func TestInvalidConfig(t *testing.T) {
	deployment := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n"
	for _, tc := range []struct {
		name string
		c    Config
		want string // a part of the error
	}{
		{"no target", Config{Patches: []Patch{{Patch: deployment}}}, "patches[0]: target is required"},
		{"empty target", Config{Patches: []Patch{{Patch: deployment, Target: &Selector{}}}}, "patches[0]: target is required"},
		{"bad label selector", Config{Patches: []Patch{{Patch: deployment, Target: &Selector{LabelSelector: "a b c"}}}}, "patches[0]: target: labelSelector"},
		{"bad kind regexp", Config{Patches: []Patch{{Patch: deployment, Target: &Selector{Kind: "Deploy(ment"}}}}, "patches[0]: target:"},
		{"empty patch", Config{Patches: []Patch{{Target: &Selector{Kind: "Deployment"}}}}, "patches[0]: patch is empty"},
		{"not YAML", Config{Patches: []Patch{{Target: &Selector{Kind: "Deployment"}, Patch: "a: [b"}}}, "patches[0]: patch is not YAML"},
		{"a scalar", Config{Patches: []Patch{{Target: &Selector{Kind: "Deployment"}, Patch: "hello"}}}, "neither a strategic merge patch"},
		{"merge patch without a name", Config{Patches: []Patch{{Target: &Selector{Kind: "Deployment"}, Patch: "apiVersion: apps/v1\nkind: Deployment\nspec: {replicas: 1}"}}}, "needs metadata.name"},
		{"merge patch without kind", Config{Patches: []Patch{{Target: &Selector{Kind: "Deployment"}, Patch: "metadata: {labels: {a: b}}"}}}, "needs apiVersion and kind"},
		{"unknown op", Config{Patches: []Patch{{Target: &Selector{Kind: "Deployment"}, Patch: "- {op: append, path: /a, value: 1}"}}}, "patches[0]: patch[0]: op append is not one of"},
		{"path not a pointer", Config{Patches: []Patch{{Target: &Selector{Kind: "Deployment"}, Patch: "- {op: add, path: a, value: 1}"}}}, "is not a JSON pointer"},
		{"second patch", Config{Patches: []Patch{{Target: &Selector{Kind: "Deployment"}, Patch: deployment}, {Target: &Selector{Kind: "Service"}}}}, "patches[1]: patch is empty"},
		{"image without name", Config{Images: []Image{{NewTag: "1"}}}, "images[0]: name is required"},
		{"image without rewrite", Config{Images: []Image{{Name: "nginx"}}}, "images[0]: image nginx: set newName, newTag or digest"},
		{"tag and digest", Config{Images: []Image{{Name: "nginx", NewTag: "1", Digest: "sha256:00"}}}, "set newTag or digest, not both"},
		{"bad digest", Config{Images: []Image{{Name: "nginx", Digest: "abc"}}}, "is not algorithm:hex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := New(tc.c)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

func TestDeterministic(t *testing.T) {
	g := NewWithT(t)
	c := Config{
		Patches: []Patch{{Target: &Selector{Kind: "Deployment"}, Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, labels: {z: '1', a: '2'}}\n"}},
		Images:  []Image{{Name: "nginx", NewName: "mirror/nginx"}},
	}
	r1, err := New(c)
	g.Expect(err).NotTo(HaveOccurred())
	r2, err := New(c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r1.Digest()).To(Equal(r2.Digest()), "the same config has the same digest")
	first, err := r1.Run(bytes.NewBufferString(manifest))
	g.Expect(err).NotTo(HaveOccurred())
	for range 20 {
		again, err := r2.Run(bytes.NewBufferString(manifest))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again.String()).To(Equal(first.String()))
		// kustomize itself, not the remembered output
		direct, err := r1.run([]byte(manifest))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(direct)).To(Equal(first.String()))
	}
	other, err := New(Config{Images: []Image{{Name: "nginx", NewName: "mirror/nginx"}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other.Digest()).NotTo(Equal(r1.Digest()))
	d := "0123456789012345678901234567890123456789"
	g.Expect(r1.Salt(d)).To(HaveLen(len(d)))
	g.Expect(r1.Salt(d)).NotTo(Equal(d))
	g.Expect(r1.Salt(d)).NotTo(Equal(other.Salt(d)))
	g.Expect(r1.Salt(d)).To(Equal(r2.Salt(d)))
}

func TestOutputIsValidForHelm(t *testing.T) {
	g := NewWithT(t)
	r, err := New(Config{Images: []Image{{Name: "nginx", NewTag: "1.27"}}})
	g.Expect(err).NotTo(HaveOccurred())
	out, err := r.Run(bytes.NewBufferString(manifest))
	g.Expect(err).NotTo(HaveOccurred())
	docs := releaseutil.SplitManifests(out.String())
	g.Expect(docs).To(HaveLen(4), "Helm splits the output into the four objects")
}

func TestManifestWithoutObjects(t *testing.T) {
	g := NewWithT(t)
	r, err := New(Config{Images: []Image{{Name: "nginx", NewTag: "1.27"}}})
	g.Expect(err).NotTo(HaveOccurred())
	out, err := r.Run(bytes.NewBufferString("---\n# Source: web/templates/empty.yaml\n\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.String()).To(Equal("---\n# Source: web/templates/empty.yaml\n\n"))
}

func TestNewDoesNotApplyThePatches(t *testing.T) {
	g := NewWithT(t)
	// Valid for a chart that sets replicas, whatever New tries it on.
	r, err := New(Config{Patches: []Patch{{Target: &Selector{Kind: "Deployment|ConfigMap|.*"}, Patch: "- {op: remove, path: /spec/replicas}"}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r).NotTo(BeNil())
	// Kustomize's own reading of a patch is still checked: a document
	// that is neither a merge patch nor a list of operations.
	_, err = New(Config{Patches: []Patch{
		{Target: &Selector{Kind: "Deployment"}, Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"},
		{Target: &Selector{Kind: "Deployment"}, Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n- {op: add, path: /a, value: 1}\n"},
	}})
	g.Expect(err).To(MatchError(HavePrefix("patches[1]: ")), "the error names the patch")
}

func TestPatchThatFailsOnAnObject(t *testing.T) {
	g := NewWithT(t)
	r, err := New(Config{Patches: []Patch{{Target: &Selector{Kind: "Service"}, Patch: "- {op: remove, path: /spec/absent}"}}})
	g.Expect(err).NotTo(HaveOccurred(), "no Service in the trial manifest")
	_, err = r.Run(bytes.NewBufferString(manifest))
	g.Expect(err).To(MatchError(ContainSubstring("post-render patches of watches.yaml")))
}

func TestFilesLeavesHooksAlone(t *testing.T) {
	g := NewWithT(t)
	r, err := New(Config{Patches: []Patch{{Target: &Selector{Kind: "ConfigMap"}, Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, labels: {patched: 'yes'}}\n"}}})
	g.Expect(err).NotTo(HaveOccurred())
	files := map[string]string{
		"web/templates/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n",
		"web/templates/hook.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hooked\n  annotations: {helm.sh/hook: pre-install}\n",
		"web/templates/NOTES.txt":  "",
		"web/templates/empty.yaml": "",
	}
	out, err := r.Files(files)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HaveKey(ManifestFile))
	g.Expect(out).To(HaveKey("web/templates/hook.yaml"))
	g.Expect(out[ManifestFile]).To(ContainSubstring("patched: \"yes\""))
	g.Expect(out["web/templates/hook.yaml"]).NotTo(ContainSubstring("patched"))
}

// BenchmarkRun measures one post-render of a four-object manifest with
// two patches and an image rewrite (figures in docs/benchmarks.md); the
// peer is the same manifest through a kind without patches.
func BenchmarkRun(b *testing.B) {
	r, err := New(Config{
		Patches: []Patch{
			{Target: &Selector{Kind: "Deployment"}, Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {template: {metadata: {labels: {team: platform}}}}\n"},
			{Target: &Selector{Kind: "Service"}, Patch: "- {op: add, path: /metadata/labels/team, value: platform}"},
		},
		Images: []Image{{Name: "nginx", NewName: "registry.example.com/nginx"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	var unset *Renderer
	for _, bc := range []struct {
		name string
		run  func() error
	}{
		// kustomize on the manifest, as for a manifest seen first.
		{"patched", func() error { _, err := r.run([]byte(manifest)); return err }},
		// the same manifest again: the remembered output.
		{"remembered", func() error { _, err := r.Run(bytes.NewBufferString(manifest)); return err }},
		{"unset", func() error { _, err := unset.Run(bytes.NewBufferString(manifest)); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestRememberedOutputs(t *testing.T) {
	g := NewWithT(t)
	r, err := New(Config{Images: []Image{{Name: "nginx", NewTag: "1.27"}}})
	g.Expect(err).NotTo(HaveOccurred())
	first, err := r.Run(bytes.NewBufferString(manifest))
	g.Expect(err).NotTo(HaveOccurred())
	want := first.String()
	first.WriteString("written by the caller")
	again, err := r.Run(bytes.NewBufferString(manifest))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.String()).To(Equal(want), "a caller's writes do not reach the next")

	c := newMemo(10)
	k := func(s string) [32]byte { return sha256.Sum256([]byte(s)) }
	c.put(k("a"), []byte("12345"))
	c.put(k("b"), []byte("12345"))
	c.put(k("c"), []byte("123"))
	_, ok := c.get(k("a"))
	g.Expect(ok).To(BeFalse(), "the oldest goes first")
	out, ok := c.get(k("b"))
	g.Expect(ok).To(BeTrue())
	g.Expect(string(out)).To(Equal("12345"))
	c.put(k("d"), []byte("12345678901"))
	_, ok = c.get(k("d"))
	g.Expect(ok).To(BeFalse(), "larger than the bound: not remembered")
	_, ok = c.get(k("c"))
	g.Expect(ok).To(BeTrue())
}
