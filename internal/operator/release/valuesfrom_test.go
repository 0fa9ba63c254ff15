package release

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// sources is a ReadSource over fixed objects, keyed "<Kind>/<name>".
func sources(objs map[string]map[string]string) ReadSource {
	return func(kind, name string) (map[string][]byte, bool, error) {
		o, ok := objs[kind+"/"+name]
		if !ok {
			return nil, false, nil
		}
		data := map[string][]byte{}
		for k, v := range o {
			data[k] = []byte(v)
		}
		return data, true, nil
	}
}

func entry(kv ...interface{}) map[string]interface{} {
	m := map[string]interface{}{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func TestApplyValuesFrom(t *testing.T) {
	objs := map[string]map[string]string{
		"Secret/db":       {"values.yaml": "db:\n  user: app\n  password: s3cret\nreplicas: 1\n", "password": "p,w=1", "bad": "a: [", "list": "- 1\n"},
		"ConfigMap/tuned": {"values.yaml": "replicas: 3\ndb:\n  user: tuned\n", "other.yaml": "extra: true\n"},
	}
	tests := []struct {
		name string
		// spec is the resource's spec.
		spec map[string]interface{}
		// want are the values; nil when an error is wanted.
		want map[string]interface{}
		// wantErr is a part of the error's message.
		wantErr string
		// wantMissing says the error is a missing object or key.
		wantMissing bool
	}{
		{
			name: "no valuesFrom leaves the spec",
			spec: map[string]interface{}{"replicas": int64(2)},
			want: map[string]interface{}{"replicas": int64(2)},
		},
		{
			name: "entries merge over the spec in order, valuesFrom removed",
			spec: map[string]interface{}{
				"valuesFrom": []interface{}{entry("kind", "Secret", "name", "db"), entry("kind", "ConfigMap", "name", "tuned")},
				"db":         map[string]interface{}{"host": "pg"},
				"replicas":   int64(5),
			},
			want: map[string]interface{}{
				"db":       map[string]interface{}{"user": "tuned", "password": "s3cret", "host": "pg"},
				"replicas": float64(3), // YAML numbers are float64, as in Helm's values files
			},
		},
		{
			name: "a targetPath sets the key's content as one string",
			spec: map[string]interface{}{"valuesFrom": []interface{}{
				entry("kind", "Secret", "name", "db", "valuesKey", "password", "targetPath", "auth.password"),
			}, "auth": map[string]interface{}{"user": "u"}},
			want: map[string]interface{}{"auth": map[string]interface{}{"user": "u", "password": "p,w=1"}},
		},
		{
			name: "a targetPath wins over the spec's value (a CRD default, say)",
			spec: map[string]interface{}{"valuesFrom": []interface{}{
				entry("kind", "Secret", "name", "db", "valuesKey", "password", "targetPath", "password"),
			}, "password": ""},
			want: map[string]interface{}{"password": "p,w=1"},
		},
		{
			name: "an escaped dot is part of a key",
			spec: map[string]interface{}{"valuesFrom": []interface{}{
				entry("kind", "Secret", "name", "db", "valuesKey", "password", "targetPath", `annotations.a\.b/c`),
			}},
			want: map[string]interface{}{"annotations": map[string]interface{}{"a.b/c": "p,w=1"}},
		},
		{
			name: "an optional missing object and key are skipped",
			spec: map[string]interface{}{"valuesFrom": []interface{}{
				entry("kind", "Secret", "name", "gone", "optional", true),
				entry("kind", "ConfigMap", "name", "tuned", "valuesKey", "nope", "optional", true),
				entry("kind", "ConfigMap", "name", "tuned", "valuesKey", "other.yaml"),
			}},
			want: map[string]interface{}{"extra": true},
		},
		{
			name:        "a missing object is refused",
			spec:        map[string]interface{}{"valuesFrom": []interface{}{entry("kind", "Secret", "name", "gone")}},
			wantErr:     "spec.valuesFrom[0]: Secret gone does not exist",
			wantMissing: true,
		},
		{
			name: "a missing key is refused",
			spec: map[string]interface{}{"valuesFrom": []interface{}{
				entry("kind", "Secret", "name", "db"), entry("kind", "Secret", "name", "db", "valuesKey", "nope"),
			}},
			wantErr:     `spec.valuesFrom[1].valuesKey: Secret db has no key "nope"`,
			wantMissing: true,
		},
		{
			name:    "content that is not YAML is refused without quoting it",
			spec:    map[string]interface{}{"valuesFrom": []interface{}{entry("kind", "Secret", "name", "db", "valuesKey", "bad")}},
			wantErr: `spec.valuesFrom[0].valuesKey: key "bad" of Secret db is not YAML values`,
		},
		{
			name:    "YAML that is not a map is refused",
			spec:    map[string]interface{}{"valuesFrom": []interface{}{entry("kind", "Secret", "name", "db", "valuesKey", "list")}},
			wantErr: `is not YAML values`,
		},
		{
			name:    "a namespace is refused",
			spec:    map[string]interface{}{"valuesFrom": []interface{}{entry("kind", "Secret", "name", "db", "namespace", "other")}},
			wantErr: "spec.valuesFrom[0].namespace: an entry has no namespace",
		},
		{
			name:    "an unknown field is refused",
			spec:    map[string]interface{}{"valuesFrom": []interface{}{entry("kind", "Secret", "name", "db", "key", "x")}},
			wantErr: "spec.valuesFrom[0].key: unknown field",
		},
		{
			name:    "another kind is refused",
			spec:    map[string]interface{}{"valuesFrom": []interface{}{entry("kind", "Pod", "name", "db")}},
			wantErr: `spec.valuesFrom[0].kind: must be Secret or ConfigMap, not "Pod"`,
		},
		{
			name:    "a name is required",
			spec:    map[string]interface{}{"valuesFrom": []interface{}{entry("kind", "Secret")}},
			wantErr: "spec.valuesFrom[0].name: is required",
		},
		{
			name:    "an empty targetPath segment is refused",
			spec:    map[string]interface{}{"valuesFrom": []interface{}{entry("kind", "Secret", "name", "db", "targetPath", "a..b")}},
			wantErr: "spec.valuesFrom[0].targetPath:",
		},
		{
			name:    "valuesFrom must be a list",
			spec:    map[string]interface{}{"valuesFrom": "db"},
			wantErr: "spec.valuesFrom: must be a list",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ApplyValuesFrom(tc.spec, sources(objs))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				for _, secret := range []string{"s3cret", "p,w=1", "a: ["} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q quotes the content %q", err, secret)
					}
				}
				var vf *ValuesFromError
				if !errors.As(err, &vf) || vf.Missing != tc.wantMissing {
					t.Errorf("error %v: ValuesFromError with Missing=%v wanted", err, tc.wantMissing)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("values = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestApplyValuesFromWithoutReader(t *testing.T) {
	spec := map[string]interface{}{"valuesFrom": []interface{}{entry("kind", "Secret", "name", "db")}}
	if _, err := ApplyValuesFrom(spec, nil); err == nil || !strings.Contains(err.Error(), "takes no values from Secrets") {
		t.Fatalf("error = %v, want a refusal for a kind without a namespace", err)
	}
	got, err := ApplyValuesFrom(map[string]interface{}{"valuesFrom": []interface{}{}, "a": "b"}, nil)
	if err != nil || !reflect.DeepEqual(got, map[string]interface{}{"a": "b"}) {
		t.Fatalf("empty valuesFrom: %v, %v", got, err)
	}
}

func TestApplyValuesFromReadError(t *testing.T) {
	read := func(kind, name string) (map[string][]byte, bool, error) { return nil, false, errors.New("forbidden") }
	spec := map[string]interface{}{"valuesFrom": []interface{}{entry("kind", "ConfigMap", "name", "c", "optional", true)}}
	// An optional entry is skipped only when the object is missing, not
	// when it cannot be read.
	if _, err := ApplyValuesFrom(spec, read); err == nil || !strings.Contains(err.Error(), "read ConfigMap c: forbidden") {
		t.Fatalf("error = %v", err)
	}
}

func TestTranslateAppliesValuesFromFirst(t *testing.T) {
	v := Values{Overrides: map[string]string{"db.user": "override"}}
	spec := map[string]interface{}{"valuesFrom": []interface{}{entry("kind", "Secret", "name", "db")}}
	got, err := v.Translate(spec, Placeholder, sources(map[string]map[string]string{"Secret/db": {"values.yaml": "db:\n  user: a\n  password: b\n"}}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]interface{}{"db": map[string]interface{}{"user": "override", "password": "b"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("values = %#v, want %#v", got, want)
	}
	if _, ok := spec["valuesFrom"]; !ok {
		t.Error("Translate changed the spec it was given")
	}
}

func TestValuesFromKeys(t *testing.T) {
	spec := map[string]interface{}{"valuesFrom": []interface{}{
		entry("kind", "Secret", "name", "db"), entry("kind", "Secret", "name", "db", "valuesKey", "x"), entry("kind", "ConfigMap", "name", "db"),
	}}
	if got, want := ValuesFromKeys(spec), []string{"Secret/db", "ConfigMap/db"}; !reflect.DeepEqual(got, want) {
		t.Errorf("keys = %v, want %v", got, want)
	}
	if got := ValuesFromKeys(map[string]interface{}{"valuesFrom": "x"}); got != nil {
		t.Errorf("keys of a malformed valuesFrom = %v", got)
	}
}
