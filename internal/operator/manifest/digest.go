package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// ContentDigestField is the field that holds, in the runtime's cache, the
// digest of a rendered object's content (ContentDigest) in place of that
// content. No Kubernetes kind has a top-level field of that name.
const ContentDigestField = "platform-operator.acme.com/content-sha256"

// ContentDigest is the digest of an object's content: the SHA-256, in
// hex, of the JSON (sorted keys) of every top-level field but apiVersion,
// kind, metadata and status. Two objects have the same digest when their
// content is the same. ok is false for data that is not JSON.
func ContentDigest(obj map[string]any) (digest string, ok bool) {
	content := make(map[string]any, len(obj))
	for k, v := range obj {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
		default:
			content[k] = v
		}
	}
	b, err := json.Marshal(content)
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), true
}

// CachedDigest is the content digest of an object the runtime's cache
// holds as its metadata and digest (ContentDigestField), "" for an object
// held whole.
func CachedDigest(obj map[string]any) string {
	d, _ := obj[ContentDigestField].(string)
	return d
}
