package localcluster

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// kwokStageFiles are the Stage files, shipped inside the kwok module, that
// make fake Nodes Ready and take Pods through their life cycle quickly.
var kwokStageFiles = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

// KwokStages returns the Stage files of the kwok module pinned by the Go
// module in modDir (hack/kwok), downloading the module if needed.
func KwokStages(modDir string) ([]string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok")
	cmd.Dir = modDir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("locating the kwok module from %s: %w", modDir, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return nil, fmt.Errorf("kwok module not downloaded (run go mod download in %s)", modDir)
	}
	stages := make([]string, 0, len(kwokStageFiles))
	for _, f := range kwokStageFiles {
		stages = append(stages, filepath.Join(dir, f))
	}
	return stages, nil
}
