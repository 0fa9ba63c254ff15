package release

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
)

// Image is an image reference split as the charts' image blocks hold it:
// repository, tag and digest (the tag or the digest may be empty, not
// both).
type Image struct {
	Repository string
	Tag        string
	Digest     string
}

var (
	// The charts' patterns for these fields (values.schema.json).
	repositoryPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9._/:-]*[a-z0-9])?$`)
	tagPattern        = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestPattern     = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

// ParseImage splits a reference "repository:tag", "repository@digest" or
// "repository:tag@digest". A port in the registry host is part of the
// repository ("localhost:5000/nginx:1.27").
func ParseImage(ref string) (Image, error) {
	var img Image
	rest := ref
	if i := strings.Index(rest, "@"); i >= 0 {
		img.Digest = rest[i+1:]
		rest = rest[:i]
		if !digestPattern.MatchString(img.Digest) {
			return Image{}, fmt.Errorf("image %q: digest %q is not sha256: and 64 lowercase hex digits", ref, img.Digest)
		}
	}
	if c := strings.LastIndex(rest, ":"); c > strings.LastIndex(rest, "/") {
		img.Tag = rest[c+1:]
		rest = rest[:c]
		if !tagPattern.MatchString(img.Tag) {
			return Image{}, fmt.Errorf("image %q: tag %q is not a valid tag", ref, img.Tag)
		}
	}
	img.Repository = rest
	if !repositoryPattern.MatchString(img.Repository) || len(img.Repository) > 255 {
		return Image{}, fmt.Errorf("image %q: repository %q is not a valid repository (lowercase registry host and path)", ref, img.Repository)
	}
	if img.Tag == "" && img.Digest == "" {
		return Image{}, fmt.Errorf("image %q has neither a tag nor a digest; pin one", ref)
	}
	return img, nil
}

// String is the reference as the charts render it: by digest when there
// is one, else by tag.
func (i Image) String() string {
	if i.Digest != "" {
		return i.Repository + "@" + i.Digest
	}
	return i.Repository + ":" + i.Tag
}

// ImageDefault is the image a chart's image block runs when a resource's
// spec leaves the block's repository, tag and digest unset: the operator's
// default for it, from a RELATED_IMAGE_* variable of its Deployment
// (watches.yaml imageDefaults).
type ImageDefault struct {
	// Path is the values path of the image block ("image", "metrics.image").
	Path string
	// Image is the default.
	Image Image
}

// imageFields are the fields of an image block that choose the image; a
// spec that sets any of them chooses its own (pullPolicy does not).
var imageFields = []string{"repository", "tag", "digest"}

// ApplyImageDefaults sets each default on vals whose image block sets none
// of repository, tag and digest, and returns the paths of the blocks it
// set. A spec that sets one of them keeps its choice, completed by the
// chart's defaults as before.
func ApplyImageDefaults(vals map[string]interface{}, defaults []ImageDefault) ([]string, error) {
	var applied []string
	for _, d := range defaults {
		path := strings.Split(d.Path, ".")
		chosen := false
		for _, f := range imageFields {
			if s, _ := NestedString(vals, append(path[:len(path):len(path)], f)); s != "" {
				chosen = true
			}
		}
		if chosen {
			continue
		}
		applied = append(applied, d.Path)
		set := map[string]string{"repository": d.Image.Repository, "tag": d.Image.Tag, "digest": d.Image.Digest}
		for _, f := range imageFields {
			if set[f] == "" {
				// The chart's default stays: a reference by digest keeps
				// the chart's tag for its version label.
				continue
			}
			if err := setNestedString(vals, append(path[:len(path):len(path)], f), set[f]); err != nil {
				return nil, fmt.Errorf("image default %s: %w", d.Path, err)
			}
		}
	}
	return applied, nil
}

// KeepImages returns vals with the image of each block of paths as stored
// holds it: the repository, tag and digest a release ran with. A block
// stored does not hold is left as it is. vals is not changed: the maps
// along each path are copied.
func KeepImages(vals, stored map[string]interface{}, paths []string) (map[string]interface{}, error) {
	out := maps.Clone(vals)
	for _, p := range paths {
		path := strings.Split(p, ".")
		block := map[string]string{}
		for _, f := range imageFields {
			if s, ok := NestedString(stored, append(path[:len(path):len(path)], f)); ok {
				block[f] = s
			}
		}
		if len(block) == 0 {
			continue
		}
		// Copy the maps down to the block, then set its fields.
		m := out
		for _, seg := range path {
			next, _ := m[seg].(map[string]interface{})
			next = maps.Clone(next)
			if next == nil {
				next = map[string]interface{}{}
			}
			m[seg] = next
			m = next
		}
		for f, v := range block {
			m[f] = v
		}
	}
	return out, nil
}

// CheckImageDefaults reports each default whose path is not an image block
// of chrt's values: a map with a repository.
func CheckImageDefaults(chrt *chart.Chart, defaults []ImageDefault) error {
	var errs []error
	for _, d := range defaults {
		path := strings.Split(d.Path, ".")
		if _, ok := NestedString(chrt.Values, append(path[:len(path):len(path)], "repository")); !ok {
			errs = append(errs, fmt.Errorf("chart %s has no image block %s (a map with a repository) in its values", chrt.Name(), d.Path))
		}
	}
	return errors.Join(errs...)
}
