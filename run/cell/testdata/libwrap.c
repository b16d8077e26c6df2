// libwrap.so calls libc's system-call wrappers for wrappers.c. Results
// are ignored: the calls are what is compared.
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *dir;

static const char *p(const char *name)
{
	static char buf[8][4096];
	static int next;
	char *b = buf[next++ % 8];
	snprintf(b, sizeof buf[0], "%s/%s", dir, name);
	return b;
}

static void on_signal(int sig)
{
	(void)sig;
}

// signals sets, reads and restores handlers through sigaction, with a
// mask, flags whose high bit is set, and libc's internal signals, which
// fail without a call; has a handler run and return through the
// restorer sigaction gave the kernel; then blocks and unblocks signals,
// libc's internal ones among them, which it never blocks, and tries a
// bad how.
static void signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART | SA_RESETHAND}, old;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaction(SIGUSR1, &sa, &old);
	sigaction(SIGUSR1, NULL, &sa);
	sigaction(32, &sa, NULL);
	sigaction(65, NULL, &old);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	kill(getpid(), SIGUSR1);
	sigaction(SIGUSR1, &old, NULL);
	sigset_t set, was;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, 32);
	sigaddset(&set, 33);
	sigprocmask(SIG_BLOCK, &set, &was);
	sigprocmask(SIG_SETMASK, NULL, &set);
	sigprocmask(SIG_SETMASK, &was, NULL);
	sigprocmask(99, &was, NULL);
}

// wrap_ready writes the process's pid and waits for a byte on standard
// input: time for a tracer to attach.
void wrap_ready(void)
{
	char line[32], c;
	// The heap, set up before the tracer attaches: memory() opens a
	// stream, the first allocation of a run that did not load syscell.
	void *volatile heap = malloc(1);
	free(heap);
	int n = snprintf(line, sizeof line, "%d\n", getpid());
	write(1, line, n);
	read(0, &c, 1);
}

static void files(void)
{
	struct stat st;
	char buf[64];
	int fd = open(p("f"), O_CREAT | O_RDWR, 0600);
	int rd = open(p("f"), O_RDONLY, 0777);
	close(openat(AT_FDCWD, p("f"), O_RDONLY));
	close(openat(AT_FDCWD, p("t"), O_CREAT | O_WRONLY, 0640));
	close(creat(p("c"), 0600));
	stat(p("f"), &st);
	lstat(p("f"), &st);
	fstat(fd, &st);
	fstat(-1, &st);
	fstatat(AT_FDCWD, p("f"), &st, AT_SYMLINK_NOFOLLOW);
	access(p("f"), R_OK);
	mkdir(p("d"), 0700);
	mkdirat(AT_FDCWD, p("d2"), 0700);
	rmdir(p("d"));
	unlinkat(AT_FDCWD, p("d2"), AT_REMOVEDIR);
	rename(p("c"), p("c2"));
	renameat(AT_FDCWD, p("c2"), AT_FDCWD, p("c"));
	link(p("c"), p("h"));
	linkat(AT_FDCWD, p("c"), AT_FDCWD, p("h2"), 0);
	symlink("c", p("s"));
	symlinkat("c", AT_FDCWD, p("s2"));
	readlink(p("s"), buf, sizeof buf);
	readlinkat(AT_FDCWD, p("s2"), buf, sizeof buf);
	unlink(p("h"));
	chmod(p("c"), 0644);
	fchmod(fd, 0600);
	chown(p("c"), -1, -1);
	lchown(p("s"), -1, -1);
	fchown(fd, -1, -1);
	fchownat(AT_FDCWD, p("c"), -1, -1, 0);
	truncate(p("c"), 0);
	ftruncate(fd, 0);
	write(fd, "xy", 2);
	lseek(fd, 0, SEEK_SET);
	pread(fd, buf, 1, 1);
	pwrite(fd, "z", 1, 1);
	struct iovec iov = {buf, 1};
	readv(rd, &iov, 1);
	writev(fd, &iov, 1);
	read(rd, buf, 1);
	fsync(fd);
	fdatasync(fd);
	flock(fd, LOCK_SH);
	int n;
	ioctl(rd, FIONREAD, &n);
	int d = dup(fd);
	dup2(fd, d);
	dup3(fd, d, O_CLOEXEC);
	close(d);
	struct statfs sfs;
	statfs(dir, &sfs);
	fstatfs(fd, &sfs);
	syncfs(fd);
	close(memfd_create("x", MFD_CLOEXEC));
	lseek(rd, 0, SEEK_SET);
	sendfile(fd, rd, NULL, 1);
	off_t off = 0;
	sendfile(fd, rd, &off, 1);
	fallocate(fd, 0, 0, 8);
	sync_file_range(fd, 0, 8, SYNC_FILE_RANGE_WRITE);
	preadv(rd, &iov, 1, 1);
	pwritev(fd, &iov, 1, 2);
	struct statx stx;
	statx(AT_FDCWD, p("f"), AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx);
	off_t in = 0, out = 4;
	copy_file_range(fd, &in, fd, &out, 1, 0);
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	struct itimerspec its = {{0, 0}, {1000, 0}};
	timerfd_settime(tfd, 0, &its, NULL);
	timerfd_gettime(tfd, &its);
	close(tfd);
	close(rd);
	close(fd);
}

static void sockets(void)
{
	int fds[2], sv[2];
	char buf[4];
	pipe(fds);
	close(fds[0]);
	close(fds[1]);
	pipe2(fds, O_CLOEXEC);
	close(fds[0]);
	close(fds[1]);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
	send(sv[0], "a", 1, 0);
	recv(sv[1], buf, 1, MSG_DONTWAIT);
	sendto(sv[0], "b", 1, 0, NULL, 0);
	recvfrom(sv[1], buf, 1, 0, NULL, NULL);
	struct iovec iov = {buf, 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	sendmsg(sv[0], &msg, 0);
	recvmsg(sv[1], &msg, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	socklen_t len = sizeof sa;
	bind(s, (struct sockaddr *)&sa, sizeof(sa_family_t));
	listen(s, 1);
	getsockname(s, (struct sockaddr *)&sa, &len);
	getpeername(s, (struct sockaddr *)&sa, &len);
	int one = 1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	len = sizeof one;
	getsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, &len);
	accept4(s, NULL, NULL, SOCK_NONBLOCK);
	int c = socket(AF_UNIX, SOCK_STREAM, 0);
	connect(c, (struct sockaddr *)&sa, sizeof(sa_family_t));
	accept(s, NULL, NULL);
	shutdown(c, SHUT_RDWR);
	struct mmsghdr mm = {.msg_hdr = msg};
	sendmmsg(sv[0], &mm, 1, 0);
	recvmmsg(sv[1], &mm, 1, MSG_DONTWAIT, NULL);
	int pfds[2];
	pipe2(pfds, O_CLOEXEC);
	write(pfds[1], "s", 1);
	splice(pfds[0], NULL, sv[0], NULL, 1, 0);
	close(pfds[0]);
	close(pfds[1]);
	struct pollfd pfd = {sv[1], POLLIN, 0};
	poll(&pfd, 1, 0);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	close(epoll_create(1));
	struct epoll_event ev = {.events = EPOLLIN};
	epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev);
	epoll_wait(ep, &ev, 1, 0);
	close(eventfd(0, EFD_CLOEXEC));
	int in = inotify_init1(IN_CLOEXEC);
	inotify_rm_watch(in, inotify_add_watch(in, dir, IN_CREATE));
	close(in);
	close(ep);
	close(c);
	close(s);
	close(sv[0]);
	close(sv[1]);
}

static void memory(void)
{
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 1);
	mprotect(m, 4096, PROT_READ);
	madvise(m, 4096, MADV_NORMAL);
	mlock(m, 4096);
	munlock(m, 4096);
	msync(m, 4096, MS_ASYNC);
	m = mremap(m, 4096, 8192, MREMAP_MAYMOVE);
	munmap(m, 8192);
	// A stream that maps its file ("m"): libc's own mmap of a file,
	// made for libwrap.so under its gate.
	FILE *f = fopen(p("f"), "rm");
	if (f != NULL) {
		fgetc(f);
		fclose(f);
	}
}

static void process(void)
{
	struct utsname u;
	struct sysinfo si;
	struct rlimit rl;
	struct timespec ts = {0, 1000};
	sched_yield();
	setpriority(PRIO_PROCESS, 0, 0);
	struct itimerval itv = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &itv, NULL);
	getitimer(ITIMER_REAL, &itv);
	getpid();
	getppid();
	gettid();
	getuid();
	geteuid();
	getgid();
	getegid();
	getpgid(0);
	getsid(0);
	setpgid(0, 0);
	setsid();
	umask(022);
	uname(&u);
	sysinfo(&si);
	kill(0, 0);
	tgkill(getpid(), gettid(), 0);
	signals();
	getrlimit(RLIMIT_NOFILE, &rl);
	setrlimit(RLIMIT_NOFILE, &rl);
	prlimit(0, RLIMIT_NOFILE, NULL, &rl);
	nanosleep(&ts, NULL);
	waitpid(-1, NULL, WNOHANG);
	wait4(-1, NULL, WNOHANG, NULL);
	// A child on this stack, which it leaves by _exit, after calls of
	// its own that write where the parent's return path would lie.
	pid_t child = vfork();
	if (child == 0) {
		getppid();
		_exit(0);
	}
	if (child > 0)
		waitpid(child, NULL, 0);
	prctl(PR_GET_DUMPABLE);
	getrandom(NULL, 0, 0);
	syscall(SYS_getppid);
	chroot(p("nonexistent"));
	mount(NULL, p("nonexistent"), NULL, 0, NULL);
	umount2(p("nonexistent"), 0);
	int d = open(dir, O_RDONLY | O_DIRECTORY);
	fchdir(d);
	close(d);
	chdir(dir);
	sync();
}

void wrap_all(const char *scratch)
{
	dir = scratch;
	write(1, "begin\n", 6);
	files();
	sockets();
	memory();
	process();
	write(1, "end\n", 4);
}
