package drift

import (
	"reflect"
	"testing"
)

func TestCompareBoth(t *testing.T) {
	hook := func(kv ...any) map[string]any {
		m := map[string]any{"name": "objects.driftguard.io"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return map[string]any{"webhooks": []any{m}}
	}
	for _, tc := range []struct {
		name          string
		desired, live map[string]any
		want          []Change
	}{
		{"equal", hook("failurePolicy", "Ignore"), hook("failurePolicy", "Ignore"), nil},
		{"changed", hook("failurePolicy", "Ignore"), hook("failurePolicy", "Fail"),
			[]Change{{Path: "/webhooks/0/failurePolicy", Desired: "Ignore", Live: "Fail"}}},
		{"added by someone else", hook("failurePolicy", "Ignore"), hook("failurePolicy", "Ignore", "matchConditions", []any{map[string]any{"name": "never", "expression": "false"}}),
			[]Change{{Path: "/webhooks/0/matchConditions", Live: []any{map[string]any{"name": "never", "expression": "false"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CompareBoth(tc.desired, tc.live, Options{})
			if len(got) == 0 && len(tc.want) == 0 {
				return
			}
			for i := range got {
				got[i].Missing = false
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}
