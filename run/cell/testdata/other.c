// other is a program prog executes; built, like the prog it is tested
// with, as a position-dependent executable at the default address. Its
// code spans more pages than prog's headers take before prog's code, so
// that the two overlap whatever prog's size.
__attribute__((used)) static void padding(void)
{
	__asm__(".fill 16384, 1, 0x90");
}

int main(void)
{
	return 0;
}
