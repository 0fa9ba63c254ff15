package localcluster

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ImageFile is one file of an image built by WriteImage.
type ImageFile struct {
	Path string // absolute path inside the image, e.g. /pause
	Mode int64  // e.g. 0o755
	Data []byte
}

// WriteImage writes a one-layer image holding files, named ref and running
// entrypoint, as a docker-archive tarball (the format of docker save), which
// `ctr images import` loads. No registry or container engine is involved:
// this is how the real node gets its sandbox image and tests their
// workloads, since no public registry is reachable here.
func WriteImage(w io.Writer, ref string, files []ImageFile, entrypoint []string) error {
	layer, err := layerTar(files)
	if err != nil {
		return err
	}
	layerSum := sha256.Sum256(layer)
	layerHex := hex.EncodeToString(layerSum[:])
	cfg, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      time.Unix(0, 0).UTC(),
		"config": map[string]any{
			"Entrypoint": entrypoint,
			"Env":        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + layerHex}},
	})
	if err != nil {
		return err
	}
	cfgSum := sha256.Sum256(cfg)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{
		"Config":   cfgName,
		"RepoTags": []string{ref},
		"Layers":   []string{layerHex + "/layer.tar"},
	}})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, e := range []struct {
		name string
		data []byte
	}{
		{cfgName, cfg},
		{layerHex + "/layer.tar", layer},
		{"manifest.json", manifest},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// layerTar is an uncompressed layer with files and their parent
// directories.
func layerTar(files []ImageFile) ([]byte, error) {
	dirs := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(path.Clean(f.Path)); d != "/" && d != "."; d = path.Dir(d) {
			dirs[strings.TrimPrefix(d, "/")] = true
		}
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range sorted {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		name := strings.TrimPrefix(path.Clean(f.Path), "/")
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: f.Mode, Size: int64(len(f.Data)), ModTime: time.Unix(0, 0)}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ImportImage loads an image tarball (docker save format, or an OCI image
// layout tar) into the real node's containerd, where the kubelet finds it:
// Pods can then use the image's name with imagePullPolicy IfNotPresent
// (or Never). It fails on a cluster without a real node.
func (c *Cluster) ImportImage(ctx context.Context, tarPath string) error {
	return importImage(ctx, c.stateDir, tarPath)
}

// ImportImage is Cluster.ImportImage for the cluster in stateDir (used by
// localcluster load).
func ImportImage(ctx context.Context, stateDir, tarPath string) error {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return err
	}
	return importImage(ctx, abs, tarPath)
}

func importImage(ctx context.Context, stateDir, tarPath string) error {
	n, err := readNodeState(stateDir)
	if err != nil {
		return fmt.Errorf("no real node in %s (start it with --nodes real): %w", stateDir, err)
	}
	out, err := exec.CommandContext(ctx, "ctr", "--address", n.ContainerdSocket, "--namespace", "k8s.io",
		"images", "import", tarPath).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import %s: %w: %s", tarPath, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// LoadImage builds an image with WriteImage and imports it into the real
// node's containerd as ref.
func (c *Cluster) LoadImage(ctx context.Context, ref string, files []ImageFile, entrypoint []string) error {
	f, err := os.CreateTemp(c.stateDir, "image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := WriteImage(f, ref, files, entrypoint); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return c.ImportImage(ctx, f.Name())
}
