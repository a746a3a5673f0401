package health

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kindCustom answers for one kind with a fixed result or error.
type kindCustom struct {
	kind string
	res  Result
	err  error
}

func (c kindCustom) Health(_ context.Context, obj *unstructured.Unstructured) (Result, bool, error) {
	if c.err != nil {
		return Result{}, false, c.err
	}
	if obj.GetKind() != c.kind {
		return Result{}, false, nil
	}
	return c.res, true, nil
}

func TestAssessCustom(t *testing.T) {
	ctx := context.Background()
	db := readFixture(t, "crd-reconciling.yaml")[0]
	deploy := readFixture(t, "deployment-healthy.yaml")[0]
	terminating := readFixture(t, "deployment-terminating.yaml")[0]
	custom := kindCustom{kind: "Database", res: Result{State: Degraded, Message: "replica lag 300s"}}
	for _, tc := range []struct {
		name    string
		obj     *unstructured.Unstructured
		custom  Custom
		want    Result
		wantErr string
	}{
		{"custom answers", db, custom, Result{State: Degraded, Message: "replica lag 300s"}, ""},
		{"custom has no opinion", deploy, custom, Result{State: Healthy, Message: "3 of 3 replicas ready"}, ""},
		{"no custom", db, nil, Result{State: Progressing, Message: "creating primary instance"}, ""},
		{"custom fails", db, kindCustom{err: errors.New("rego: eval_conflict_error")}, Result{State: Progressing, Message: "creating primary instance"}, "custom health of Database shop/orders: rego: eval_conflict_error"},
		{"custom state invalid", db, kindCustom{kind: "Database", res: Result{State: "Broken"}}, Result{State: Progressing, Message: "creating primary instance"}, `invalid state "Broken"`},
		{"missing object", nil, custom, Result{State: Missing, Message: "not found"}, ""},
		{"terminating object", terminating, kindCustom{kind: "Deployment", res: Result{State: Healthy, Message: "fine"}}, Result{State: Progressing, Message: "terminating"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AssessCustom(ctx, tc.obj, nil, tc.custom)
			if got != tc.want {
				t.Errorf("AssessCustom = %+v, want %+v", got, tc.want)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error = %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
