package cell

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestChooseWindow(t *testing.T) {
	for _, tc := range []struct {
		slots, block int
		shift        uint8
		err          string
	}{
		{slots: 4, block: 1, shift: 12},
		{slots: 4, block: 4096, shift: 12},
		{slots: 4, block: 4097, shift: 13},
		{slots: 1, block: 7193, shift: 13},
		{slots: 1000, block: 70000, shift: 17},
		{slots: 4, block: 0, err: "0-byte stub block"},
		{slots: 1 << 20, block: 8192, err: "do not fit"},
	} {
		rng := rand.New(rand.NewPCG(1, uint64(tc.slots)))
		for range 100 {
			w, err := chooseWindow(rng, tc.slots, tc.block)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%d slots of %d bytes: %v, want an error with %q", tc.slots, tc.block, err, tc.err)
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if w.shift != tc.shift || w.slots != tc.slots {
				t.Errorf("%d slots of %d bytes: shift %d, %d slots; want %d, %d", tc.slots, tc.block, w.shift, w.slots, tc.shift, tc.slots)
			}
			if w.base%regionSize != 0 || w.base < windowLow || w.base+w.size() > windowHigh {
				t.Errorf("window %#x+%#x is not a 4 GiB-aligned region between %#x and %#x", w.base, w.size(), windowLow, windowHigh)
			}
		}
	}
}
