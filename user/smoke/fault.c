/* Dereferences NULL: the kernel must kill the process with SIGSEGV and
 * keep running. */
int main(void)
{
	volatile int *p = 0;
	return *p;
}
