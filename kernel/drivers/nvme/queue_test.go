package nvme

import "testing"

func TestNeedEvent(t *testing.T) {
	for _, tc := range []struct {
		ev, new, old uint16
		want         bool
	}{
		{5, 6, 5, true},   // the controller saw 5: it waits for 6
		{4, 6, 5, false},  // it asked to hear when 5 passed; already rung
		{5, 8, 5, true},   // several at once past it
		{7, 8, 5, true},   // the event index inside the new range
		{9, 8, 5, false},  // beyond it
		{63, 0, 63, true}, // wrapping
	} {
		if got := needEvent(tc.ev, tc.new, tc.old); got != tc.want {
			t.Errorf("needEvent(%d, %d, %d) = %v", tc.ev, tc.new, tc.old, got)
		}
	}
}
