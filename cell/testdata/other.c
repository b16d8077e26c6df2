// other is a program prog executes; built, like the prog it is tested
// with, as a position-dependent executable at the default address.
int main(void)
{
	return 0;
}
