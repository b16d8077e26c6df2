// server: a server in phases (server.toml). It creates DIR/start through
// libserve.so while starting, forks a worker that waits, then serves
// (its first epoll_wait) and tries DIR/serving; a worker forked once it
// serves tries DIR/born-serving; the first worker, released, tries
// DIR/worker-starting, serves, and tries DIR/worker-serving. Once serving,
// it also tries DIR/serving-syscall through syscall(). Each try
// prints "NAME RESULT", the result 0 or an errno name.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int lib_create(const char *path);
int lib_create_raw(const char *path);

static const char *dir;

static void try_with(const char *name, int (*create)(const char *))
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int r = create(path);
	printf("%s %s\n", name, r == 0 ? "0" : strerrorname_np(errno));
	fflush(stdout);
}

static void try(const char *name)
{
	try_with(name, lib_create);
}

// serve makes the first call of a serving loop: an epoll_wait that finds
// nothing.
static void serve(void)
{
	struct epoll_event ev;
	int ep = epoll_create1(0);
	if (ep < 0 || epoll_wait(ep, &ev, 1, 0) < 0) {
		perror("epoll");
		_exit(2);
	}
	close(ep);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	dir = argv[1];
	try("start");
	int release[2];
	if (pipe(release) < 0)
		return 2;
	pid_t worker = fork();
	if (worker == 0) {
		char c;
		close(release[1]);
		if (read(release[0], &c, 1) != 1)
			_exit(2);
		try("worker-starting");
		serve();
		try("worker-serving");
		_exit(0);
	}
	serve();
	try("serving");
	try_with("serving-syscall", lib_create_raw);
	// A clock tick past the mark, which /proc's start times count in.
	nanosleep(&(struct timespec){.tv_nsec = 30 * 1000 * 1000}, NULL);
	pid_t born = fork();
	if (born == 0) {
		try("born-serving");
		_exit(0);
	}
	if (write(release[1], "x", 1) != 1)
		return 2;
	int status;
	waitpid(born, &status, 0);
	waitpid(worker, &status, 0);
	return 0;
}
