// wrappers makes, through libwrap.so, a call to every wrapper of
// audit/wrappers.def that can be made harmlessly, in DIR (argv[1]):
// TestStubsMatchLibc compares the calls under strace with and without
// the stubs. Its own code makes no system call.
void wrap_ready(void);
void wrap_all(const char *dir);

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	wrap_ready();
	wrap_all(argv[1]);
	return 0;
}
