package cell

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// Where the stub window may go: a 4 GiB-aligned region between 96 and
// 112 TiB. That is below the top-down mmap base, which the kernel puts
// at least 1 TiB of randomization and the stack gap under the 128 TiB
// top of user space, and above PIE executables and their heaps (at most
// about 86 TiB) and the legacy bottom-up mmap area that starts at 42 TiB.
const (
	windowLow    = 0x6000_0000_0000
	windowHigh   = 0x7000_0000_0000
	regionSize   = 1 << 32
	minSlotShift = 12
)

// window is where the stub window goes in one process.
type window struct {
	base  uint64
	shift uint8
	slots int
}

// chooseWindow picks a random window for slots compartments whose stub
// block is blockSize bytes: one slot per compartment, each the smallest
// power of two of at least a page that holds the block.
func chooseWindow(rng *rand.Rand, slots, blockSize int) (window, error) {
	if blockSize <= 0 {
		return window{}, fmt.Errorf("cell: the audit library reports a %d-byte stub block", blockSize)
	}
	shift := max(minSlotShift, bits.Len(uint(blockSize-1)))
	if uint64(slots)<<shift > regionSize/2 {
		return window{}, fmt.Errorf("cell: %d slots of a %d-byte stub block do not fit one 4 GiB region", slots, blockSize)
	}
	region := windowLow/regionSize + rng.Uint64N((windowHigh-windowLow)/regionSize)
	return window{base: region * regionSize, shift: uint8(shift), slots: slots}, nil
}

// size is the window's length in bytes.
func (w window) size() uint64 { return uint64(w.slots) << w.shift }
