package policy

import "golang.org/x/sys/unix"

// errnoByName lets policies write errno(EPERM) instead of errno(1).
var errnoByName = map[string]uint16{
	"EPERM":        uint16(unix.EPERM),
	"ENOENT":       uint16(unix.ENOENT),
	"EINTR":        uint16(unix.EINTR),
	"EIO":          uint16(unix.EIO),
	"EBADF":        uint16(unix.EBADF),
	"EAGAIN":       uint16(unix.EAGAIN),
	"ENOMEM":       uint16(unix.ENOMEM),
	"EACCES":       uint16(unix.EACCES),
	"EFAULT":       uint16(unix.EFAULT),
	"EBUSY":        uint16(unix.EBUSY),
	"EEXIST":       uint16(unix.EEXIST),
	"EINVAL":       uint16(unix.EINVAL),
	"ENOSPC":       uint16(unix.ENOSPC),
	"EROFS":        uint16(unix.EROFS),
	"ENOSYS":       uint16(unix.ENOSYS),
	"ENOTSUP":      uint16(unix.ENOTSUP),
	"EAFNOSUPPORT": uint16(unix.EAFNOSUPPORT),
}
