/*
 * The socket to the launcher: inherited at the descriptor CHANNEL_ENV
 * names (syscell run, the program's parent), or connected to the path
 * SOCKET_ENV names (a supervisor serving containers, which knows the
 * program by the socket's peer credentials). Text lines both ways, the
 * compiled program as raw bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "audit.h"

static int fd = -1;
static bool parent;
static char in[8192];
static size_t in_len, in_pos;
static char out[1 << 16];
static size_t out_len;

void channel_open(const char *s)
{
	char *end;
	long n = strtol(s, &end, 10);
	struct stat st;
	if (*s == '\0' || *end != '\0' || n < 0 || n > 1 << 20)
		die("%s=%s: not a descriptor", CHANNEL_ENV, s);
	if (fstat(n, &st) != 0 || !S_ISSOCK(st.st_mode))
		die("%s=%s: not syscell's socket", CHANNEL_ENV, s);
	fd = n;
	/* Programs this one executes must not take some other descriptor
	   with the same number for the launcher. */
	unsetenv(CHANNEL_ENV);
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
		die("socket to the launcher: %s", strerror(errno));
	parent = true;
}

void channel_connect(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (*path == '\0' || strlen(path) >= sizeof addr.sun_path)
		die("%s=%s: not a socket's path", SOCKET_ENV, path);
	strcpy(addr.sun_path, path);
	/* Programs this one executes inherit its filter, not a connection
	   of their own. */
	unsetenv(SOCKET_ENV);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket to the supervisor: %s", strerror(errno));
	int r;
	do
		r = connect(fd, (struct sockaddr *)&addr, sizeof addr);
	while (r != 0 && errno == EINTR);
	if (r != 0)
		die("connect to the supervisor at %s: %s (the program does not run without it)", path, strerror(errno));
}

bool channel_parent(void)
{
	return parent;
}

int channel_fd(void)
{
	return fd;
}

static void fill(void)
{
	ssize_t n;
	do
		n = read(fd, in, sizeof in);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		die("read from the launcher: %s", strerror(errno));
	if (n == 0)
		die("the launcher closed the socket");
	in_len = n;
	in_pos = 0;
}

char *channel_line(void)
{
	static char line[8192];
	size_t n = 0;
	for (;;) {
		if (in_pos == in_len)
			fill();
		char c = in[in_pos++];
		if (c == '\n')
			break;
		if (n == sizeof line - 1)
			die("line from the launcher longer than %zu bytes", sizeof line - 1);
		line[n++] = c;
	}
	line[n] = '\0';
	return line;
}

void channel_read(void *buf, size_t n)
{
	char *p = buf;
	while (n > 0) {
		if (in_pos == in_len)
			fill();
		size_t k = in_len - in_pos < n ? in_len - in_pos : n;
		memcpy(p, in + in_pos, k);
		in_pos += k;
		p += k;
		n -= k;
	}
}

void channel_flush(void)
{
	size_t done = 0;
	while (done < out_len) {
		/* A launcher that closed the socket is a failure to report,
		   not a SIGPIPE that would end the program without a word. */
		ssize_t n = send(fd, out + done, out_len - done, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("write to the launcher: %s", strerror(errno));
		done += n;
	}
	out_len = 0;
}

void channel_printf(const char *fmt, ...)
{
	va_list ap;
	for (int tries = 0; tries < 2; tries++) {
		va_start(ap, fmt);
		int n = vsnprintf(out + out_len, sizeof out - out_len, fmt, ap);
		va_end(ap);
		if (n < 0)
			die("format a message to the launcher");
		if ((size_t)n < sizeof out - out_len) {
			out_len += n;
			return;
		}
		channel_flush();
	}
	die("message to the launcher longer than %zu bytes", sizeof out);
}
