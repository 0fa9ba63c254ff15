// Package postrender applies a kind's post-render patches (the postRender
// field of its watches.yaml entry) to what its chart renders: kustomize
// patches, strategic merge or JSON 6902, each with a target selector, and
// kustomize image rewrites. A platform team uses them to add a label, a
// toleration, a securityContext or a registry to every release of a kind
// without forking the chart.
//
// A Renderer is built once per kind at start-up (New checks every patch
// and compiles the kustomization) and is a Helm post-renderer: the
// runtime's action path sets it on installs, upgrades and dry-run
// upgrades, before the confinement check, and the admission check runs
// the same Renderer on the same manifest (Files), so that the webhook
// judges the patched objects.
//
// Contract:
//   - The output keeps the order of the objects (kustomize's FIFO order);
//     Helm's "# Source:" comments are dropped.
//   - Same input, same bytes: idle reconciles upgrade nothing. Recent
//     outputs are remembered by their input's SHA-256, so a manifest
//     seen again costs no kustomize run.
//   - A nil or empty Renderer changes nothing, not even a byte.
//   - Only the manifest passes a post-renderer; Helm never post-renders
//     hooks, and neither does Files.
package postrender

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	helmpostrender "helm.sh/helm/v3/pkg/postrender"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"
)

// Config is the postRender field of a watches.yaml entry, as written.
type Config struct {
	// Patches are applied in order, each to the objects its target
	// selects.
	Patches []Patch `json:"patches,omitempty"`
	// Images rewrite the images of the rendered workloads' containers.
	Images []Image `json:"images,omitempty"`
}

// Patch is a kustomize patch: a strategic merge patch (a YAML object) or a
// JSON 6902 patch (a YAML list of operations), applied to every rendered
// object its target selects.
type Patch struct {
	Patch  string    `json:"patch"`
	Target *Selector `json:"target"`
}

// Selector selects rendered objects: every field set must match. Group,
// version, kind, name and namespace are regular expressions matched
// against the whole value; labelSelector and annotationSelector are label
// selector expressions ("app.kubernetes.io/name=nginx,tier!=dev").
type Selector struct {
	Group              string `json:"group,omitempty"`
	Version            string `json:"version,omitempty"`
	Kind               string `json:"kind,omitempty"`
	Name               string `json:"name,omitempty"`
	Namespace          string `json:"namespace,omitempty"`
	LabelSelector      string `json:"labelSelector,omitempty"`
	AnnotationSelector string `json:"annotationSelector,omitempty"`
}

// Image is a kustomize image rewrite: containers running an image named
// Name run NewName (when set) with NewTag or Digest (when set) instead.
type Image struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// Renderer applies one kind's patches and image rewrites. Its methods
// accept a nil Renderer, which changes nothing.
type Renderer struct {
	// kustomization is the compiled kustomization.yaml; its one resource
	// is the rendered manifest (resourceFile).
	kustomization []byte
	// digest identifies the kustomization, for release digests.
	digest string
	// outputs remembers recent results: charts that look up the cluster
	// are rendered on every reconcile (their dry-run upgrade cannot be
	// skipped by digest), mostly into the manifest of the time before.
	outputs *memo
}

// Files of the in-memory kustomization each Run builds.
const (
	dir               = "/postrender"
	kustomizationFile = dir + "/kustomization.yaml"
	resourceFile      = dir + "/manifest.yaml"
)

// New checks c and compiles it. An empty Config gives a nil Renderer. The
// error names the patch or image at fault.
func New(c Config) (*Renderer, error) {
	if len(c.Patches) == 0 && len(c.Images) == 0 {
		return nil, nil
	}
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: []string{"manifest.yaml"},
	}
	var errs []error
	for i, p := range c.Patches {
		kp, err := p.compile()
		if err != nil {
			errs = append(errs, fmt.Errorf("patches[%d]: %w", i, err))
			continue
		}
		k.Patches = append(k.Patches, kp)
	}
	for i, img := range c.Images {
		if err := img.check(); err != nil {
			errs = append(errs, fmt.Errorf("images[%d]: %w", i, err))
			continue
		}
		k.Images = append(k.Images, types.Image{Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	b, err := yaml.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("compile the kustomization: %w", err)
	}
	if err := trial(k); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	return &Renderer{kustomization: b, digest: hex.EncodeToString(sum[:]), outputs: newMemo(memoBytes)}, nil
}

// trial runs each patch of k once, and its image rewrites, each patch's
// target replaced by one that selects nothing: kustomize reads a patch
// when it runs, so a patch it cannot read is reported at start-up, and a
// patch that is valid for the kind's charts but not for a made-up object
// (a remove of a field) is not.
func trial(k types.Kustomization) error {
	var errs []error
	for i, p := range k.Patches {
		p.Target = &types.Selector{ResId: resid.ResId{Gvk: resid.Gvk{Kind: "PostRenderTrial"}}}
		one := types.Kustomization{TypeMeta: k.TypeMeta, Resources: k.Resources, Patches: []types.Patch{p}}
		if err := trialRun(one); err != nil {
			errs = append(errs, fmt.Errorf("patches[%d]: %w", i, err))
		}
	}
	if len(k.Images) > 0 {
		images := types.Kustomization{TypeMeta: k.TypeMeta, Resources: k.Resources, Images: k.Images}
		if err := trialRun(images); err != nil {
			errs = append(errs, fmt.Errorf("images: %w", err))
		}
	}
	return errors.Join(errs...)
}

// trialRun runs k on the sample manifest.
func trialRun(k types.Kustomization) error {
	b, err := yaml.Marshal(k)
	if err != nil {
		return fmt.Errorf("compile the kustomization: %w", err)
	}
	_, err = (&Renderer{kustomization: b}).run([]byte(sample))
	return err
}

// sample is the manifest of the trial run of New.
const sample = `apiVersion: v1
kind: ConfigMap
metadata:
  name: sample
`

// jsonPatchOps are the operations of RFC 6902.
var jsonPatchOps = map[string]bool{"add": true, "remove": true, "replace": true, "move": true, "copy": true, "test": true}

// compile checks p and returns it as kustomize's.
func (p Patch) compile() (types.Patch, error) {
	if p.Target == nil || *p.Target == (Selector{}) {
		return types.Patch{}, errors.New("target is required (kind, name, labelSelector, ...): the names of a release's objects differ from release to release")
	}
	sel, err := p.Target.compile()
	if err != nil {
		return types.Patch{}, fmt.Errorf("target: %w", err)
	}
	if strings.TrimSpace(p.Patch) == "" {
		return types.Patch{}, errors.New("patch is empty")
	}
	var doc any
	if err := yaml.Unmarshal([]byte(p.Patch), &doc); err != nil {
		return types.Patch{}, fmt.Errorf("patch is not YAML: %w", err)
	}
	switch d := doc.(type) {
	case []any: // JSON 6902
		if len(d) == 0 {
			return types.Patch{}, errors.New("patch is an empty list of JSON 6902 operations")
		}
		for i, op := range d {
			m, ok := op.(map[string]any)
			if !ok {
				return types.Patch{}, fmt.Errorf("patch[%d] is not a JSON 6902 operation {op: add, path: /..., value: ...}", i)
			}
			if name, _ := m["op"].(string); !jsonPatchOps[name] {
				return types.Patch{}, fmt.Errorf("patch[%d]: op %v is not one of add, remove, replace, move, copy, test", i, m["op"])
			}
			if path, _ := m["path"].(string); !strings.HasPrefix(path, "/") {
				return types.Patch{}, fmt.Errorf("patch[%d]: path %v is not a JSON pointer such as /metadata/labels", i, m["path"])
			}
		}
	case map[string]any: // strategic merge
		if av, _ := d["apiVersion"].(string); av == "" {
			return types.Patch{}, errors.New("a strategic merge patch needs apiVersion and kind (its metadata.name is ignored: the target selects)")
		}
		if k, _ := d["kind"].(string); k == "" {
			return types.Patch{}, errors.New("a strategic merge patch needs apiVersion and kind (its metadata.name is ignored: the target selects)")
		}
		if meta, _ := d["metadata"].(map[string]any); meta == nil || meta["name"] == nil || meta["name"] == "" {
			return types.Patch{}, errors.New("a strategic merge patch needs metadata.name, which kustomize reads; any name does, the target selects")
		}
	default:
		return types.Patch{}, errors.New("patch is neither a strategic merge patch (a YAML object) nor a JSON 6902 patch (a YAML list)")
	}
	return types.Patch{Patch: p.Patch, Target: sel}, nil
}

// compile checks s and returns it as kustomize's.
func (s Selector) compile() (*types.Selector, error) {
	sel := &types.Selector{
		ResId: resid.ResId{
			Gvk:       resid.Gvk{Group: s.Group, Version: s.Version, Kind: s.Kind},
			Name:      s.Name,
			Namespace: s.Namespace,
		},
		LabelSelector:      s.LabelSelector,
		AnnotationSelector: s.AnnotationSelector,
	}
	if _, err := types.NewSelectorRegex(sel); err != nil {
		return nil, err
	}
	if _, err := labels.Parse(s.LabelSelector); err != nil {
		return nil, fmt.Errorf("labelSelector: %w", err)
	}
	if _, err := labels.Parse(s.AnnotationSelector); err != nil {
		return nil, fmt.Errorf("annotationSelector: %w", err)
	}
	return sel, nil
}

// check checks a rewrite.
func (img Image) check() error {
	switch {
	case img.Name == "":
		return errors.New("name is required: the image to rewrite, without tag (nginx, docker.io/library/nginx)")
	case img.NewName == "" && img.NewTag == "" && img.Digest == "":
		return fmt.Errorf("image %s: set newName, newTag or digest", img.Name)
	case img.NewTag != "" && img.Digest != "":
		return fmt.Errorf("image %s: set newTag or digest, not both", img.Name)
	case img.Digest != "" && !strings.Contains(img.Digest, ":"):
		return fmt.Errorf("image %s: digest %q is not algorithm:hex such as sha256:0123abcd", img.Name, img.Digest)
	}
	return nil
}

// Digest identifies what r does ("" for a nil Renderer); a release's
// digest includes it, so that a change of the patches upgrades releases.
func (r *Renderer) Digest() string {
	if r == nil {
		return ""
	}
	return r.digest
}

// Salt returns the release digest d, changed by r's Digest when r is set,
// still a label value: releases rendered with other patches get another
// digest, releases of a kind without patches keep theirs.
func (r *Renderer) Salt(d string) string {
	if r == nil {
		return d
	}
	sum := sha256.Sum256([]byte(d + "\npostrender " + r.digest))
	return hex.EncodeToString(sum[:])[:len(d)]
}

// PostRenderer returns r as Helm's post-renderer, nil when r is nil.
func (r *Renderer) PostRenderer() helmpostrender.PostRenderer {
	if r == nil {
		return nil
	}
	return r
}

// Chain returns a post-renderer that runs first (when set), then r.
func (r *Renderer) Chain(first helmpostrender.PostRenderer) helmpostrender.PostRenderer {
	switch {
	case r == nil:
		return first
	case first == nil:
		return r
	}
	return chain{first, r}
}

// chain runs its post-renderers in order.
type chain []helmpostrender.PostRenderer

// Run runs each post-renderer on what the one before returned.
func (c chain) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	out := in
	for _, p := range c {
		var err error
		if out, err = p.Run(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Run applies r to a rendered manifest (Helm's post-renderer).
func (r *Renderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	if r == nil {
		return in, nil
	}
	key := sha256.Sum256(in.Bytes())
	if out, ok := r.outputs.get(key); ok {
		return bytes.NewBuffer(out), nil
	}
	out, err := r.run(in.Bytes())
	if err != nil {
		return nil, fmt.Errorf("post-render patches of watches.yaml: %w", err)
	}
	r.outputs.put(key, out)
	return bytes.NewBuffer(slices.Clone(out)), nil
}

// memoBytes bounds the outputs a Renderer remembers, in bytes of
// manifest: about a thousand releases of a chart of ten objects.
const memoBytes = 16 << 20

// memo remembers outputs by the SHA-256 of their input, forgetting the
// oldest first once they hold more than max bytes.
type memo struct {
	mu    sync.Mutex
	max   int
	size  int
	m     map[[sha256.Size]byte][]byte
	order [][sha256.Size]byte
}

func newMemo(maxBytes int) *memo {
	return &memo{max: maxBytes, m: map[[sha256.Size]byte][]byte{}}
}

// get returns a copy of the output remembered for key: the caller's
// buffer may be written to.
func (c *memo) get(key [sha256.Size]byte) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out, ok := c.m[key]
	return slices.Clone(out), ok
}

// put remembers out for key; an output larger than the bound is not.
func (c *memo) put(key [sha256.Size]byte, out []byte) {
	if c == nil || len(out) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; ok {
		return
	}
	for c.size+len(out) > c.max && len(c.order) > 0 {
		c.size -= len(c.m[c.order[0]])
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[key] = out
	c.order = append(c.order, key)
	c.size += len(out)
}

// run runs the kustomization on manifest.
func (r *Renderer) run(manifest []byte) ([]byte, error) {
	if !hasObject(manifest) {
		return manifest, nil
	}
	fs := filesys.MakeFsInMemory()
	if err := fs.WriteFile(kustomizationFile, r.kustomization); err != nil {
		return nil, err
	}
	if err := fs.WriteFile(resourceFile, manifest); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionNone // the order Helm sorted the objects in
	res, err := krusty.MakeKustomizer(opts).Run(fs, dir)
	if err != nil {
		return nil, err
	}
	return res.AsYaml()
}

// hasObject reports whether manifest holds a document that is not empty
// (kustomize refuses a resource file without one).
func hasObject(manifest []byte) bool {
	for _, doc := range releaseutil.SplitManifests(string(manifest)) {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil || len(m) > 0 {
			return true // not empty, or kustomize says what is wrong with it
		}
	}
	return false
}

// ManifestFile is the name, in the files Files returns, of the post-rendered
// manifest.
const ManifestFile = "manifest"

// Files post-renders the files a chart rendered (template name to
// content, as engine.Render returns them) the way a Helm install or
// upgrade does: the objects that are not hooks, joined into one manifest
// in Helm's install order, pass r; hooks do not. It returns the post-rendered
// manifest as ManifestFile beside each hook's file, or files itself when r
// is nil.
func (r *Renderer) Files(files map[string]string) (map[string]string, error) {
	if r == nil {
		return files, nil
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	out, err := r.Run(&b)
	if err != nil {
		return nil, err
	}
	result := map[string]string{ManifestFile: out.String()}
	for _, h := range hooks {
		if prev, ok := result[h.Path]; ok {
			result[h.Path] = prev + "\n---\n" + h.Manifest
		} else {
			result[h.Path] = h.Manifest
		}
	}
	return result, nil
}
