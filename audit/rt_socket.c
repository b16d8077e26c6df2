/*
 * The runtime's descriptor passing: the audit library hands the filter's
 * listener to the supervisor this way, and so does enforce's shim.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "rt.h"

ssize_t rt_send_fd(int sock, const void *data, size_t len, int fd)
{
	char control[CMSG_SPACE(sizeof fd)] = {0};
	struct iovec iov = {(void *)data, len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
	struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof fd);
	memcpy(CMSG_DATA(cmsg), &fd, sizeof fd);
	ssize_t sent;
	do
		sent = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	return sent;
}
