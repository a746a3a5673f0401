package health

import "testing"

func TestStateValid(t *testing.T) {
	for _, s := range []State{Healthy, Progressing, Degraded, Suspended, Missing, Unknown, NoHealth} {
		if !s.Valid() {
			t.Errorf("%q.Valid() = false", s)
		}
	}
	for _, s := range []State{"", "healthy", "Ok", "Failed"} {
		if s.Valid() {
			t.Errorf("%q.Valid() = true", s)
		}
	}
	if len(States) != 7 {
		t.Errorf("States has %d entries, want 7", len(States))
	}
}

func TestWorst(t *testing.T) {
	for _, tc := range []struct {
		in   []State
		want State
	}{
		{nil, Healthy},
		{[]State{Healthy, Healthy}, Healthy},
		{[]State{Healthy, Suspended}, Suspended},
		{[]State{Suspended, Progressing, Healthy}, Progressing},
		{[]State{Progressing, Unknown}, Unknown},
		{[]State{Unknown, Missing}, Missing},
		{[]State{Missing, Degraded, Healthy}, Degraded},
		{[]State{Healthy, "bogus"}, Unknown},
		// An object without health of its own makes nothing less healthy.
		{[]State{NoHealth}, Healthy},
		{[]State{NoHealth, NoHealth, Healthy}, Healthy},
		{[]State{NoHealth, Suspended}, Suspended},
		{[]State{Progressing, NoHealth}, Progressing},
	} {
		if got := Worst(tc.in...); got != tc.want {
			t.Errorf("Worst(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestResultString(t *testing.T) {
	if got := (Result{State: Healthy}).String(); got != "Healthy" {
		t.Errorf("String() = %q", got)
	}
	if got := (Result{State: Degraded, Message: "failed: x"}).String(); got != "Degraded: failed: x" {
		t.Errorf("String() = %q", got)
	}
}
