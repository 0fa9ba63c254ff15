package conversion

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/acme/platform-operator/internal/operator/apikinds"
)

// Path is where the webhook is served, the path of the CRDs' conversion
// clientConfig.
const Path = apikinds.ConversionPath

// maxRequestBytes bounds a ConversionReview: the API server sends at most
// one list page of objects, each at most about 1.5 MiB in etcd.
const maxRequestBytes = 64 << 20

// Webhook answers apiextensions.k8s.io/v1 ConversionReviews with Rules.
type Webhook struct {
	Rules *Rules
	Log   logr.Logger
}

// ServeHTTP converts every object of the review, or none: one object it
// cannot convert fails the whole review, with a message naming it (the
// API server returns it to the client that read or wrote the object).
func (w *Webhook) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(rw, "POST a ConversionReview", http.StatusMethodNotAllowed)
		return
	}
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(http.MaxBytesReader(rw, req.Body, maxRequestBytes)).Decode(&review); err != nil {
		http.Error(rw, fmt.Sprintf("decode the ConversionReview: %v", err), http.StatusBadRequest)
		return
	}
	if review.Request == nil {
		http.Error(rw, "the ConversionReview has no request", http.StatusBadRequest)
		return
	}
	resp := w.convert(review.Request)
	if resp.Result.Status != metav1.StatusSuccess {
		w.Log.Info("Conversion refused", "uid", resp.UID, "desiredAPIVersion", review.Request.DesiredAPIVersion,
			"reason", resp.Result.Message)
	}
	out := apiextensionsv1.ConversionReview{TypeMeta: review.TypeMeta, Response: resp}
	if out.APIVersion == "" {
		out.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("ConversionReview"))
	}
	rw.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(rw).Encode(out); err != nil {
		w.Log.Error(err, "Could not write the ConversionReview response", "uid", resp.UID)
	}
}

func (w *Webhook) convert(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID}
	converted := make([]runtime.RawExtension, 0, len(req.Objects))
	for i, raw := range req.Objects {
		obj := &unstructured.Unstructured{}
		err := obj.UnmarshalJSON(raw.Raw)
		if err == nil {
			err = w.Rules.Convert(obj, req.DesiredAPIVersion)
		}
		var out []byte
		if err == nil {
			out, err = obj.MarshalJSON()
		}
		if err != nil {
			resp.Result = metav1.Status{
				Status:  metav1.StatusFailure,
				Reason:  metav1.StatusReasonBadRequest,
				Message: fmt.Sprintf("object %d: %v", i, err),
			}
			return resp
		}
		converted = append(converted, runtime.RawExtension{Raw: out})
	}
	resp.ConvertedObjects = converted
	resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	return resp
}
