// cellprobe: a program with two libraries for syscell's container tests.
// libmaymk.so may make directories and files, libnomk.so may not; each
// line printed is "WHAT: ok" or "WHAT: ERRNO-NAME".
//
//   cellprobe work DIR    libnomk.so's getpid; libmaymk.so's mkdir of
//                         DIR/made and file DIR/made/file (through stdio)
//   cellprobe attack DIR  work, then libnomk.so's mkdir of DIR/denied and
//                         file DIR/denied-file: what libmaymk.so may do
//   cellprobe wait DIR    prints "ready", reads from its standard input,
//                         then libmaymk.so
//                         creates DIR/after (through stdio, called by
//                         a pointer: a supervised call) and mkdirs
//                         DIR/after-dir, and libnomk.so calls getpid;
//                         prints nothing more (the supervisor may be
//                         gone: printf's write would fail) and exits
//                         with the create's errno, 0 if it worked. A
//                         recording of this mode covers what work and
//                         attack need, attack's denied calls aside.
//   cellprobe loop N      libnomk.so calls getpid N times from libc's
//                         code (through a pointer to the wrapper), which
//                         the supervisor decides, and
//                         prints "ns-per-call: T", the mean time of a call
//
// The program writes and reads with its own calls of write and read,
// not through stdio: those the filter decides by their stubs, in the
// kernel, and a read already waiting when the supervisor dies is not one
// of the supervised calls that then fail.
//
// Built with gcc -O2 -fomit-frame-pointer, as Debian builds its programs.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

long nomk_getpid(void);
long nomk_getpid_libc(void);
int nomk_mkdir(const char *path);
int nomk_create(const char *path);
int maymk_mkdir(const char *path);
int maymk_create(const char *path);
int maymk_create_supervised(const char *path);

static void say(const char *s)
{
	size_t n = strlen(s);
	if (write(1, s, n) != (ssize_t)n)
		exit(4);
}

static void report(const char *what, int err)
{
	char line[128];
	snprintf(line, sizeof line, "%s: %s\n", what, err == 0 ? "ok" : strerrorname_np(err));
	say(line);
}

static char *join(const char *dir, const char *name)
{
	char *path;
	if (asprintf(&path, "%s/%s", dir, name) < 0)
		exit(2);
	return path;
}

static long long now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int loop(const char *count)
{
	long n = atol(count);
	if (n <= 0)
		return 2;
	long long start = now();
	for (long i = 0; i < n; i++)
		if (nomk_getpid_libc() <= 0)
			return 1;
	char line[64];
	snprintf(line, sizeof line, "ns-per-call: %lld\n", (now() - start) / n);
	say(line);
	return 0;
}

static void work(const char *dir)
{
	report("nomk-getpid", nomk_getpid() > 0 ? 0 : 1);
	report("maymk-mkdir", maymk_mkdir(join(dir, "made")));
	report("maymk-create", maymk_create(join(dir, "made/file")));
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		say("usage: cellprobe work|attack|wait DIR, or cellprobe loop N\n");
		return 2;
	}
	const char *mode = argv[1], *dir = argv[2];
	if (strcmp(mode, "loop") == 0)
		return loop(argv[2]);
	if (strcmp(mode, "work") == 0 || strcmp(mode, "attack") == 0) {
		work(dir);
		if (strcmp(mode, "attack") == 0) {
			report("nomk-mkdir", nomk_mkdir(join(dir, "denied")));
			report("nomk-create", nomk_create(join(dir, "denied-file")));
		}
		return 0;
	}
	if (strcmp(mode, "wait") != 0) {
		say("cellprobe: unknown mode\n");
		return 2;
	}
	char *after = join(dir, "after"), *after_dir = join(dir, "after-dir");
	char line[64];
	say("ready\n");
	if (read(0, line, sizeof line) <= 0)
		return 3;
	int err = maymk_create_supervised(after);
	maymk_mkdir(after_dir);
	nomk_getpid();
	return err;
}
