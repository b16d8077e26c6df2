package trace

import "golang.org/x/sys/unix"

// kernelDev converts the kernel's internal dev_t (major << 20 | minor) to
// the encoding stat reports.
func kernelDev(dev uint32) uint64 {
	return unix.Mkdev(dev>>20, dev&(1<<20-1))
}
