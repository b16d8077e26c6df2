// Package iouring names io_uring's operations and makes rings restricted
// to some of them. An io_uring ring performs file and network operations
// that its submission queue, memory the process shares with the kernel,
// asks for: no system call names them, so no seccomp filter sees them,
// and any code of the process that can write the queue can ask for any
// operation the ring allows, whichever library set the ring up.
package iouring

import "fmt"

// ops are the operations' names, by number: IORING_OP_* of Linux 6.18's
// include/uapi/linux/io_uring.h, in lower case without the prefix.
var ops = []string{
	"nop", "readv", "writev", "fsync", "read_fixed", "write_fixed", "poll_add", "poll_remove",
	"sync_file_range", "sendmsg", "recvmsg", "timeout", "timeout_remove", "accept", "async_cancel",
	"link_timeout", "connect", "fallocate", "openat", "close", "files_update", "statx", "read",
	"write", "fadvise", "madvise", "send", "recv", "openat2", "epoll_ctl", "splice",
	"provide_buffers", "remove_buffers", "tee", "shutdown", "renameat", "unlinkat", "mkdirat",
	"symlinkat", "linkat", "msg_ring", "fsetxattr", "setxattr", "fgetxattr", "getxattr", "socket",
	"uring_cmd", "send_zc", "sendmsg_zc", "read_multishot", "waitid", "futex_wait", "futex_wake",
	"futex_waitv", "fixed_fd_install", "ftruncate", "bind", "listen", "recv_zc", "epoll_wait",
	"readv_fixed", "writev_fixed", "pipe", "nop128", "uring_cmd128",
}

// Op is an operation's number (an SQE's opcode).
type Op uint8

// Lookup returns the operation called name.
func Lookup(name string) (Op, bool) {
	for i, n := range ops {
		if n == name {
			return Op(i), true
		}
	}
	return 0, false
}

// String is the operation's name, or its number for one this package
// does not know.
func (op Op) String() string {
	if int(op) < len(ops) {
		return ops[op]
	}
	return fmt.Sprintf("op%d", uint8(op))
}
