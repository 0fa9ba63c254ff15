package manifest

import (
	"testing"

	. "github.com/onsi/gomega"
)

// A manifest as Helm stores it: documents after "---", each with a
// "# Source:" comment.
const manifestWithSecret = `---
# Source: app/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: db
type: Opaque
stringData:
  password: "hunter2hunter2"
  username: app
data:
  token: c2VjcmV0LXRva2Vu
---
# Source: app/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: config
data:
  password: "not-a-secret-in-a-configmap"
`

func TestRedactManifest(t *testing.T) {
	cases := []struct {
		name     string
		manifest string
		// secrets are strings that must be gone from the result
		secrets []string
		// keep are strings that must survive
		keep []string
	}{
		{
			// Secret data and stringData values are replaced, keys and the
			// rest of the Secret stay; the ConfigMap is untouched.
			name:     "secret and configmap",
			manifest: manifestWithSecret,
			secrets:  []string{"hunter2hunter2", "c2VjcmV0LXRva2Vu"},
			keep: []string{
				"# Source: app/templates/secret.yaml", "name: db", "password: REDACTED", "token: REDACTED", "username: REDACTED",
				"# Source: app/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\ndata:\n  password: \"not-a-secret-in-a-configmap\"\n",
			},
		},
		{
			// Secrets inside a List are redacted too.
			name: "list of secrets",
			manifest: `---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Secret
  metadata: {name: a}
  data: {key: dG9wc2VjcmV0}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: b}
  data: {key: visible}
`,
			secrets: []string{"dG9wc2VjcmV0"},
			keep:    []string{"key: REDACTED", "key: visible"},
		},
		{
			// A document that is not valid YAML is dropped, not passed on.
			name:     "unparseable document",
			manifest: "---\nkind: Secret\nstringData: {password: [oops\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
			secrets:  []string{"oops"},
			keep:     []string{"REDACTED: a document that could not be parsed", "kind: ConfigMap"},
		},
		{
			// Nothing to redact: the manifest comes back byte for byte.
			name:     "no secret",
			manifest: "---\n# Source: x\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
			keep:     []string{"---\n# Source: x\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"},
		},
		{
			// An empty manifest stays empty.
			name: "empty",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out := RedactManifest(tc.manifest)
			for _, s := range tc.secrets {
				g.Expect(out).NotTo(ContainSubstring(s))
			}
			for _, k := range tc.keep {
				g.Expect(out).To(ContainSubstring(k))
			}
			if tc.manifest == "" {
				g.Expect(out).To(BeEmpty())
			}
			// Redacting twice changes nothing more.
			g.Expect(RedactManifest(out)).To(Equal(out))
		})
	}
}

func TestRedactText(t *testing.T) {
	g := NewWithT(t)
	values := SecretValues(manifestWithSecret)
	// "app" is too short to look for; the ConfigMap is not a Secret.
	g.Expect(values).To(Equal([]string{"hunter2hunter2", "secret-token"}))

	log := "connecting as app with hunter2hunter2\nAuthorization: Bearer secret-token\npassword not-a-secret-in-a-configmap"
	out := RedactText(log, values)
	g.Expect(out).NotTo(ContainSubstring("hunter2"))
	g.Expect(out).NotTo(ContainSubstring("secret-token"))
	g.Expect(out).To(ContainSubstring("connecting as app with REDACTED"))
	g.Expect(out).To(ContainSubstring("not-a-secret-in-a-configmap"))

	// A certificate or key of several lines is looked for line by line too,
	// longest first so a value that holds another is replaced whole.
	multi := DataValues(map[string][]byte{"tls.key": []byte("-----BEGIN KEY-----\nAAAABBBBCCCC\n-----END KEY-----\n"), "short": []byte("AAAA")})
	g.Expect(multi[0]).To(HavePrefix("-----BEGIN KEY-----\nAAAABBBBCCCC"))
	g.Expect(RedactText("key line: AAAABBBBCCCC", multi)).To(Equal("key line: REDACTED"))
	g.Expect(RedactText("id AAAA", multi)).To(Equal("id REDACTED"))
}

// TestRedactManifestSpelledOtherwise: a Secret whose kind is spelled with
// an escape sequence or a tag is redacted as one spelled plainly; a
// document without the word is returned byte for byte, unparsed.
func TestRedactManifestSpelledOtherwise(t *testing.T) {
	g := NewWithT(t)
	escaped := "apiVersion: v1\nkind: \"Secr\\u0065t\"\nmetadata:\n  name: a\nstringData:\n  password: hunter2\n"
	tagged := "apiVersion: v1\nkind: !!binary U2VjcmV0\nmetadata:\n  name: b\nstringData:\n  password: hunter2\n"
	for _, doc := range []string{escaped, tagged} {
		out := RedactManifest(doc)
		g.Expect(out).NotTo(ContainSubstring("hunter2"), doc)
	}
	plain := "# Source: x/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:  {name: c}\ndata:\n  k:   v\n"
	g.Expect(RedactManifest(plain)).To(Equal(plain))
	g.Expect(maySpell(plain, "Secret")).To(BeFalse())
}
